import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { checkDockerfileLines } from '../../src/langgraph-project/dockerfile-policy.js';
import { GraphConfigError } from '../../src/langgraph-project/graph-config-error.js';
import { findBuildUser, subordinateIds } from '../../src/sandbox/build-user.js';
import { firewallRules, loopbackResolvers } from '../../src/sandbox/firewall.js';

const refused = (lines: string[]) => assert.throws(() => checkDockerfileLines(lines), GraphConfigError, JSON.stringify(lines));

test('project Dockerfile lines may not use --mount, --network, --security or --device, however written', () => {
  refused(['RUN --mount=type=bind,from=link,source=/rootlink,target=/host cat /host/etc/shadow']);
  refused(['run --MOUNT=type=cache,target=/x true']);
  refused(['RUN --mo\\', 'unt=type=bind,source=/,target=/h true']);
  refused(['RUN \\', '# a comment inside the continuation', '  --mount=type=secret,id=x cat /run/secrets/x']);
  refused(['ONBUILD RUN --mount=type=bind,target=/h true']);
  refused(['RUN ["--mount=type=bind", "x"]']);
  refused(['RUN --network=host curl http://127.0.0.1']);
  refused(['RUN --security=insecure true']);
  refused(['RUN --device=/dev/kvm true']);
  refused(['RUN true\n  RUN --mount=type=tmpfs,target=/t true']);
});

test('project Dockerfile lines may not end inside an instruction (it would swallow the line Berth adds next)', () => {
  assert.throws(() => checkDockerfileLines(['RUN echo one \\']), /ends inside an instruction/);
});

test('ordinary project Dockerfile lines pass', () => {
  checkDockerfileLines([]);
  checkDockerfileLines([
    'ENV COREPACK_INTEGRITY_KEYS=0',
    'RUN apt-get update && \\',
    '    apt-get install -y curl',
    '# mounting nothing',
    'FROM localhost/berth/langgraphjs-api:20 AS extra',
    'COPY --from=extra /api /api2',
    'RUN echo mountain --mountpoint-like-word-without-dashes mount',
    'RUN npm install --omit=dev --no-audit',
  ]);
});

test('the firewall matches the build user alone and refuses loopback, link-local, the host and denied networks', () => {
  const rules = firewallRules(999, { loopbackResolvers: ['127.0.0.53'], denyNetworks: ['10.0.0.0/8', 'fd00::/8'] });
  // Only sockets of the build user: packets without a socket (the kernel's own resets) pass.
  assert.match(rules, /meta skuid 999 jump build_user/);
  assert.doesNotMatch(rules, /skuid != /);
  assert.match(rules, /ip daddr 127\.0\.0\.53 udp dport 53 accept/);
  assert.match(rules, /fib daddr type local reject with tcp reset/);
  assert.match(rules, /ip daddr \{ 127\.0\.0\.0\/8, 169\.254\.0\.0\/16 \} reject/);
  assert.match(rules, /ip6 daddr \{ ::1\/128, fe80::\/10 \} reject/);
  assert.match(rules, /ip daddr \{ 10\.0\.0\.0\/8 \} reject/);
  assert.match(rules, /ip6 daddr \{ fd00::\/8 \} reject/);
  // The resolver exception comes before the refusals, or lookups through systemd-resolved would fail.
  assert.ok(rules.indexOf('udp dport 53 accept') < rules.indexOf('fib daddr type local reject'));
});

test('loopback resolvers are read from resolv.conf; others need no exception', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'berth-resolv-'));
  try {
    const file = path.join(dir, 'resolv.conf');
    await writeFile(file, 'nameserver 127.0.0.53\nnameserver 10.255.255.53\n# nameserver 127.0.0.9\nnameserver ::1\noptions edns0\n');
    assert.deepEqual(await loopbackResolvers(file), ['127.0.0.53', '::1']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the build user needs an account, a non-zero uid and 65,536 subordinate ids of each kind', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'berth-users-'));
  try {
    const files = { passwd: path.join(dir, 'passwd'), subuid: path.join(dir, 'subuid'), subgid: path.join(dir, 'subgid') };
    await writeFile(files.passwd, 'root:x:0:0::/root:/bin/sh\nbuilder:x:990:990::/nonexistent:/usr/sbin/nologin\n');
    await writeFile(files.subuid, 'builder:200000:65536\n');
    await writeFile(files.subgid, '990:300000:30000\n990:400000:40000\n');
    assert.deepEqual(await findBuildUser('builder', files), { name: 'builder', uid: 990, gid: 990 });
    assert.match(String(await findBuildUser('nobody-here', files)), /does not exist/);
    assert.match(String(await findBuildUser('root', files)), /is root/);
    await writeFile(files.subgid, 'builder:300000:1000\n');
    assert.match(String(await findBuildUser('builder', files)), /65536 subordinate gids.*it has 1000/);
    assert.equal(subordinateIds('a:1:5\nb:2:7\na:9:3\n', 'a', 42), 8);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
