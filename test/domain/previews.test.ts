import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DomainError } from '../../src/domain/errors.js';
import {
  branchMatches,
  DEFAULT_PREVIEW_SETTINGS,
  decidePullRequest,
  isIdle,
  mergePreviewSettings,
  previewName,
  previewSecrets,
  refuseUnpreviewable,
} from '../../src/domain/previews.js';

const ON = { ...DEFAULT_PREVIEW_SETTINGS, enabled: true, max_previews: 2 };
const PR = { action: 'opened', number: 7, headSha: 'a'.repeat(40), headRef: 'feature', fork: false, labels: [] as string[] };
const context = { exists: false, live: 0, operatorAllowsForks: false };

test('pull request events: make, update, remove, or say why not', () => {
  assert.deepEqual(decidePullRequest(ON, PR, context), { kind: 'upsert' });
  assert.deepEqual(
    decidePullRequest(ON, { ...PR, action: 'synchronize' }, { ...context, exists: true, live: 2 }),
    { kind: 'upsert' },
    'an update is never over the maximum',
  );
  assert.equal(decidePullRequest(ON, PR, { ...context, live: 2 }).kind, 'refuse');
  assert.deepEqual(decidePullRequest(ON, { ...PR, action: 'closed' }, { ...context, exists: true }), { kind: 'remove', why: 'pull request #7 was closed' });
  assert.equal(
    decidePullRequest({ ...ON, enabled: false }, { ...PR, action: 'closed' }, { ...context, exists: true }).kind,
    'remove',
    'turned off, a closed pull request still loses its preview',
  );
  assert.equal(decidePullRequest({ ...ON, enabled: false }, PR, context).kind, 'ignore');
  assert.equal(decidePullRequest(ON, { ...PR, action: 'assigned' }, context).kind, 'ignore');
});

test('label trigger and forks', () => {
  const labelled = { ...ON, trigger: 'label' as const, label: 'preview' };
  assert.equal(decidePullRequest(labelled, PR, context).kind, 'ignore');
  assert.equal(decidePullRequest(labelled, { ...PR, action: 'labeled', labels: ['preview'] }, context).kind, 'upsert');
  const unlabeled = { ...PR, action: 'unlabeled' };
  assert.deepEqual(decidePullRequest(labelled, unlabeled, { ...context, exists: true }), {
    kind: 'remove',
    why: "label 'preview' was removed from pull request #7",
  });
  assert.equal(decidePullRequest(labelled, unlabeled, context).kind, 'ignore', 'no preview, nothing to remove');
  assert.equal(
    decidePullRequest(labelled, { ...unlabeled, labels: ['preview'] }, { ...context, exists: true }).kind,
    'ignore',
    'another label removed: the preview stays',
  );
  assert.equal(decidePullRequest(ON, unlabeled, { ...context, exists: true }).kind, 'ignore', 'trigger all: labels change nothing');
  assert.equal(
    decidePullRequest({ ...labelled, enabled: false }, unlabeled, { ...context, exists: true }).kind,
    'remove',
    'turned off, a preview whose label went still goes',
  );
  const fork = { ...PR, fork: true };
  assert.equal(decidePullRequest({ ...ON, allow_forks: true }, fork, context).kind, 'refuse', 'the operator must allow forks too');
  assert.equal(decidePullRequest(ON, fork, { ...context, operatorAllowsForks: true }).kind, 'refuse', 'and the deployment');
  assert.equal(decidePullRequest({ ...ON, allow_forks: true }, fork, { ...context, operatorAllowsForks: true }).kind, 'upsert');
});

test('secrets: only the named ones, and none for a fork', () => {
  const secrets = [
    { name: 'A', value: '1' },
    { name: 'B', value: '2' },
  ];
  const settings = { ...ON, secret_names: ['B'] };
  assert.deepEqual(previewSecrets(secrets, DEFAULT_PREVIEW_SETTINGS, { kind: 'branch', branch: 'x', head_sha: 'a' }), []);
  assert.deepEqual(previewSecrets(secrets, settings, { kind: 'branch', branch: 'x', head_sha: 'a' }), [{ name: 'B', value: '2' }]);
  assert.deepEqual(previewSecrets(secrets, settings, { kind: 'pull_request', number: 1, head_ref: 'x', head_sha: 'a', fork: true }), []);
});

test('branch patterns, names and idle time', () => {
  assert.ok(branchMatches('preview/*', 'preview/one'));
  assert.ok(!branchMatches('preview/*', 'preview/one/two'));
  assert.ok(branchMatches('preview/**', 'preview/one/two'));
  assert.ok(!branchMatches('preview/*', 'previewXone'));
  assert.ok(!branchMatches('a.b', 'axb'), 'a dot is a dot');
  assert.equal(previewName('web', { kind: 'pull_request', number: 3, head_ref: 'x', head_sha: 'a', fork: false }), 'web-pr-3');
  assert.equal(previewName('web', { kind: 'branch', branch: 'Preview/New_UI', head_sha: 'a' }), 'web-br-preview-new-ui');
  const long = previewName('w'.repeat(63), { kind: 'pull_request', number: 3, head_ref: 'x', head_sha: 'a', fork: false });
  assert.ok(long.length <= 63 && /^w+-[0-9a-f]{8}$/.test(long), long);
  assert.notEqual(previewName('web', { kind: 'pull_request', number: 3, head_ref: 'x', head_sha: 'a', fork: false }, true), 'web-pr-3');
  assert.ok(isIdle('2026-01-01T00:00:00Z', 30, Date.parse('2026-01-01T00:31:00Z')));
  assert.ok(!isIdle('2026-01-01T00:00:00Z', 30, Date.parse('2026-01-01T00:29:00Z')));
});

test('settings: merged field by field, checked as a whole', () => {
  const merged = mergePreviewSettings(null, { enabled: true, secret_names: ['B', 'A', 'B'], max_previews: null });
  assert.deepEqual(merged, { ...DEFAULT_PREVIEW_SETTINGS, enabled: true, secret_names: ['A', 'B'] });
  assert.throws(() => mergePreviewSettings(merged, { trigger: 'label' }), DomainError);
  assert.equal(mergePreviewSettings({ ...merged, branch_pattern: 'x/*' }, { branch_pattern: null }).branch_pattern, null);
  assert.throws(() => refuseUnpreviewable({ isPreview: true, fromRepository: true }, merged), DomainError);
  assert.throws(() => refuseUnpreviewable({ isPreview: false, fromRepository: false }, merged), DomainError);
  refuseUnpreviewable({ isPreview: false, fromRepository: false }, { ...merged, enabled: false });
});
