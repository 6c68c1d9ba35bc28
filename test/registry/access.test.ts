import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isRepositoryName } from '../../src/domain/registry-location.js';
import { grantAccess, parseScopes, ScopeError } from '../../src/registry/access.js';

test('parseScopes reads repeated values, space-separated scopes, classes and host:port names', () => {
  assert.deepEqual(parseScopes(['repository:berth/a:pull,push repository:berth/b:pull', 'repository(plugin):p:pull']), [
    { type: 'repository', name: 'berth/a', actions: ['pull', 'push'] },
    { type: 'repository', name: 'berth/b', actions: ['pull'] },
    { type: 'repository(plugin)', name: 'p', actions: ['pull'] },
  ]);
  assert.deepEqual(parseScopes(['repository:localhost:5000/x:pull']), [{ type: 'repository', name: 'localhost:5000/x', actions: ['pull'] }]);
  assert.deepEqual(parseScopes([]), []);
  assert.deepEqual(parseScopes(['']), []);
});

test('parseScopes refuses a scope without type, name and actions', () => {
  for (const bad of ['repository', 'repository:berth/a', ':berth/a:pull', 'repository:berth/a:']) {
    assert.throws(() => parseScopes([bad]), ScopeError, bad);
  }
});

test('grantAccess grants the requested actions the grants allow and nothing beyond', () => {
  const grants = { 'berth/a': ['push', 'pull'] as const, 'berth/ro': ['pull'] as const };
  const granted = grantAccess(parseScopes(['repository:berth/a:pull,push,delete', 'repository:berth/ro:push,pull', 'repository:berth/other:pull']), grants);
  assert.deepEqual(granted, [
    { type: 'repository', name: 'berth/a', actions: ['pull', 'push'] },
    { type: 'repository', name: 'berth/ro', actions: ['pull'] },
  ]);
});

test('grantAccess: a path/* grant covers repositories below the path only', () => {
  const grants = { 'berth/dep-1/*': ['push', 'pull'] as const };
  const names = ['berth/dep-1/agent', 'berth/dep-1/a/b', 'berth/dep-1', 'berth/dep-10/agent', 'berth/dep-1x/agent'];
  const granted = grantAccess(parseScopes(names.map((name) => `repository:${name}:push`)), grants);
  assert.deepEqual(
    granted.map((entry) => entry.name),
    ['berth/dep-1/agent', 'berth/dep-1/a/b'],
  );
});

test('grantAccess never grants names outside the registry grammar, other resource types, or unknown actions', () => {
  const grants = { 'berth/dep-1/*': ['*'] as const };
  const requested = parseScopes([
    'repository:berth/dep-1/../dep-2:push',
    'repository:berth/dep-1/UPPER:push',
    'repository(plugin):berth/dep-1/x:pull',
    'registry:catalog:*',
    'repository:berth/dep-1/x:admin,pull',
  ]);
  assert.deepEqual(grantAccess(requested, grants), [{ type: 'repository', name: 'berth/dep-1/x', actions: ['pull'] }]);
});

test('grantAccess grants "*" only to a credential that holds "*"', () => {
  const requested = parseScopes(['repository:berth/a:*']);
  assert.deepEqual(grantAccess(requested, { 'berth/a': ['pull', 'push', 'delete'] }), []);
  assert.deepEqual(grantAccess(requested, { 'berth/a': ['*'] }), [{ type: 'repository', name: 'berth/a', actions: ['*'] }]);
});

test('isRepositoryName follows the distribution grammar', () => {
  for (const good of ['a', 'berth/a', 'a.b_c__d--e/f', '0b6e5c1a-8f1e-4c59-9c59-1f2a3b4c5d6e/my-agent']) assert.ok(isRepositoryName(good), good);
  for (const bad of ['', 'A', '/a', 'a/', 'a//b', '-a', 'a-', 'a:b', '..', `${'a'.repeat(256)}`]) assert.ok(!isRepositoryName(bad), bad);
});
