import assert from 'node:assert/strict';
import { test } from 'node:test';
import { builtImageName, classifyImage, parseImageReference } from '../../src/registry/image-names.js';
import { parseRegistryLocation } from '../../src/domain/registry-location.js';

const WS = '7d1f6a2e-3b4c-4d5e-8f9a-0b1c2d3e4f5a';
const DEP = '0b6e5c1a-8f1e-4c59-9c59-1f2a3b4c5d6e';
const REV = '9c8b7a6f-5e4d-4c3b-8a29-181716151413';
const DIGEST = `sha256:${'ab'.repeat(32)}`;
const REGISTRY = parseRegistryLocation('registry.example.com:5000/berth');

test('built images are named after workspace, deployment and revision: in the registry, or in the local namespace', () => {
  assert.deepEqual(builtImageName(REGISTRY, { workspaceId: WS, deploymentId: DEP, revisionId: REV }), {
    image: `registry.example.com:5000/berth/${WS}/${DEP}:${REV}`,
    repository: `berth/${WS}/${DEP}`,
  });
  assert.deepEqual(builtImageName(parseRegistryLocation('127.0.0.1:5000'), { workspaceId: WS, deploymentId: DEP, revisionId: REV }), {
    image: `127.0.0.1:5000/${WS}/${DEP}:${REV}`,
    repository: `${WS}/${DEP}`,
  });
  assert.deepEqual(builtImageName(undefined, { workspaceId: WS, deploymentId: DEP, revisionId: REV }), {
    image: `localhost/berth/${WS}/${DEP}:${REV}`,
    repository: `berth/${WS}/${DEP}`,
  });
  assert.throws(() => builtImageName(undefined, { workspaceId: WS, deploymentId: DEP, revisionId: 'latest' }));
});

test('image references are read as docker and podman read them', () => {
  assert.deepEqual(parseImageReference(`127.0.0.1:5000/a/b:v1@${DIGEST}`), { domain: '127.0.0.1:5000', path: 'a/b', tag: 'v1', digest: DIGEST });
  assert.deepEqual(parseImageReference('berth/x'), { domain: null, path: 'berth/x', tag: null, digest: null });
  assert.deepEqual(parseImageReference('localhost/x:1'), { domain: 'localhost', path: 'x', tag: '1', digest: null });
  assert.deepEqual(parseImageReference('Registry/x'), { domain: 'Registry', path: 'x', tag: null, digest: null });
  assert.equal(parseImageReference('localhost/Upper'), null);
  assert.equal(parseImageReference('a/b@sha256:short'), null);
});

test("the registry's images belong to the workspace and deployment their path names", () => {
  assert.deepEqual(classifyImage(`registry.example.com:5000/berth/${WS}/${DEP}/my-agent@${DIGEST}`, REGISTRY), {
    kind: 'managed',
    place: 'registry',
    repository: `berth/${WS}/${DEP}/my-agent`,
    claims: [
      { layout: 'workspace', workspaceId: WS, deploymentId: DEP },
      { layout: 'legacy-push', deploymentId: WS },
    ],
  });
  // The host is compared as DNS compares it, so capitals do not slip past.
  assert.equal(classifyImage(`REGISTRY.example.com:5000/berth/${WS}/${DEP}:${REV}`, REGISTRY).kind, 'managed');
  // Pushed with a push token issued before the rule, and built before it.
  assert.deepEqual(classifyImage(`registry.example.com:5000/berth/${DEP}/my-agent:v1`, REGISTRY), {
    kind: 'managed',
    place: 'registry',
    repository: `berth/${DEP}/my-agent`,
    claims: [{ layout: 'legacy-push', deploymentId: DEP }],
  });
  assert.deepEqual(classifyImage(`registry.example.com:5000/berth/berth/agent:${REV}`, REGISTRY), {
    kind: 'managed',
    place: 'registry',
    repository: 'berth/berth/agent',
    claims: [{ layout: 'legacy-build', deploymentName: 'agent', revisionId: REV }],
  });
  // Anything else below the prefix belongs to nobody.
  assert.deepEqual(classifyImage('registry.example.com:5000/berth/library/busybox', REGISTRY), {
    kind: 'managed',
    place: 'registry',
    repository: 'berth/library/busybox',
    claims: [],
  });
});

test("Berth's local namespace, short names and image ids are Berth's too; every other image is not", () => {
  for (const name of [`localhost/berth/${WS}/${DEP}:${REV}`, `berth/${WS}/${DEP}:${REV}`, `LOCALHOST/berth/${WS}/${DEP}:${REV}`]) {
    assert.deepEqual(classifyImage(name, undefined), {
      kind: 'managed',
      place: 'local',
      repository: `berth/${WS}/${DEP}`,
      claims: [{ layout: 'workspace', workspaceId: WS, deploymentId: DEP }],
    });
  }
  assert.deepEqual(classifyImage(`localhost/berth/agent:${REV}`, undefined), {
    kind: 'managed',
    place: 'local',
    repository: 'berth/agent',
    claims: [{ layout: 'legacy-build', deploymentName: 'agent', revisionId: REV }],
  });
  for (const id of ['a2a9', 'a2a943aacf9a', `sha256:${'ab'.repeat(32)}`]) assert.deepEqual(classifyImage(id, REGISTRY), { kind: 'local-id' });
  for (const other of [
    'docker.io/library/busybox:latest',
    'busybox',
    'localhost/berth-test-agent:v1',
    `registry.example.com:5000/other/${WS}/${DEP}`,
    `registry.example.com:5001/berth/${WS}/${DEP}`,
    `ghcr.io/berth/${WS}/${DEP}`,
  ]) {
    assert.deepEqual(classifyImage(other, REGISTRY), { kind: 'foreign' }, other);
  }
});
