import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ImageOwnerLookups, judgeImage } from '../../src/registry/image-ownership.js';
import { parseRegistryLocation } from '../../src/domain/registry-location.js';

const A = '7d1f6a2e-3b4c-4d5e-8f9a-0b1c2d3e4f5a';
const B = '1e2d3c4b-5a69-4788-9766-554433221100';
const DEP_A = '0b6e5c1a-8f1e-4c59-9c59-1f2a3b4c5d6e';
const REV_A = '9c8b7a6f-5e4d-4c3b-8a29-181716151413';
const GONE = '00000000-0000-4000-8000-000000000000';
const REGISTRY = parseRegistryLocation('registry.example.com/berth');

// Workspace A has deployment DEP_A ("agent") with revision REV_A; nothing else exists.
const owners: ImageOwnerLookups = {
  workspaceOfDeployment: async (id) => (id === DEP_A ? A : undefined),
  ownerOfRevision: async (id) => (id === REV_A ? { workspaceId: A, deploymentName: 'Agent' } : undefined),
};
const judge = (workspaceId: string, image: string, builtFor?: { deploymentName: string }) =>
  judgeImage(owners, REGISTRY, { workspaceId, image, ...(builtFor ? { builtFor } : {}) });

test("an image of Berth's registry is its workspace's, with a pull credential for its repository alone", async () => {
  assert.deepEqual(await judge(A, `registry.example.com/berth/${A}/${DEP_A}/my-agent:v1`), {
    allowed: true,
    registryRepository: `berth/${A}/${DEP_A}/my-agent`,
  });
  assert.deepEqual(await judge(A, `registry.example.com/berth/${DEP_A}/my-agent:v1`), { allowed: true, registryRepository: `berth/${DEP_A}/my-agent` });
  assert.deepEqual(await judge(A, `registry.example.com/berth/berth/agent:${REV_A}`), { allowed: true, registryRepository: 'berth/berth/agent' });
  assert.deepEqual(await judge(B, 'docker.io/library/busybox'), { allowed: true, registryRepository: null });
});

test("another workspace's image, and a path of no deployment, are refused alike", async () => {
  const foreign = await judge(B, `registry.example.com/berth/${A}/${DEP_A}/my-agent:v1`);
  const nobody = await judge(B, `registry.example.com/berth/${B}/${GONE}/my-agent:v1`);
  assert.equal(foreign.allowed, false);
  assert.equal(nobody.allowed, false);
  const reasons = [foreign, nobody].map((v) => (v.allowed ? '' : v.reason.replace(/'[^']*'/, "'…'")));
  assert.equal(reasons[0], reasons[1], 'the answer does not tell whose the path is');
  // A workspace id in the path is not enough: the deployment must be that workspace's.
  assert.equal((await judge(B, `registry.example.com/berth/${B}/${DEP_A}/x:v1`)).allowed, false);
  assert.equal((await judge(B, `registry.example.com/berth/${DEP_A}/my-agent:v1`)).allowed, false);
  assert.equal((await judge(B, `registry.example.com/berth/berth/agent:${REV_A}`)).allowed, false);
  assert.equal((await judge(A, `registry.example.com/berth/berth/other:${REV_A}`)).allowed, false, "the name must be the revision's deployment's");
});

test("a build of before the rule stays its deployment's after its revision is gone, and only as the revision's own build", async () => {
  const built = `localhost/berth/agent:${GONE}`;
  assert.deepEqual(await judge(A, built, { deploymentName: 'Agent' }), { allowed: true, registryRepository: null });
  assert.equal((await judge(A, built)).allowed, false, 'named by a client, it must resolve through its revision');
  assert.equal((await judge(B, built, { deploymentName: 'other' })).allowed, false);
});
