import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deploymentPushTarget } from '../../src/registry/image-names.js';
import { parseRegistryLocation, RegistryLocationError } from '../../src/domain/registry-location.js';

const WORKSPACE = '7d1f6a2e-3b4c-4d5e-8f9a-0b1c2d3e4f5a';
const DEPLOYMENT = '0b6e5c1a-8f1e-4c59-9c59-1f2a3b4c5d6e';

test('a registry with a path puts each workspace, then each deployment, below it', () => {
  const location = parseRegistryLocation('registry.example.com:5000/berth/');
  assert.deepEqual(location, { host: 'registry.example.com:5000', pathPrefix: 'berth' });
  assert.deepEqual(deploymentPushTarget(location, WORKSPACE, DEPLOYMENT), {
    registryUrl: `registry.example.com:5000/berth/${WORKSPACE}/${DEPLOYMENT}`,
    repositoryGrant: `berth/${WORKSPACE}/${DEPLOYMENT}/*`,
    repositoryPath: `berth/${WORKSPACE}/${DEPLOYMENT}`,
  });
});

test('a registry without a path puts each workspace at the top', () => {
  const target = deploymentPushTarget(parseRegistryLocation('127.0.0.1:5000'), WORKSPACE, DEPLOYMENT);
  assert.equal(target.registryUrl, `127.0.0.1:5000/${WORKSPACE}/${DEPLOYMENT}`);
  assert.equal(target.repositoryGrant, `${WORKSPACE}/${DEPLOYMENT}/*`);
});

test('BERTH_REGISTRY values that cannot name images are refused with the reason', () => {
  assert.throws(() => parseRegistryLocation('https://registry.example.com'), /without a scheme/);
  assert.throws(() => parseRegistryLocation('registry.example.com/Berth'), /must be lowercase/);
  assert.throws(() => parseRegistryLocation('bad host/x'), RegistryLocationError);
  assert.throws(() => deploymentPushTarget(parseRegistryLocation('r.example'), WORKSPACE, 'Not/Valid'), RegistryLocationError);
  assert.throws(() => deploymentPushTarget(parseRegistryLocation('r.example'), '..', DEPLOYMENT), RegistryLocationError);
});
