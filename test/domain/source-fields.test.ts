import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { completeRevisionConfig } from '../../src/domain/deployment-config.js';
import { DomainError } from '../../src/domain/errors.js';
import { checkRevisionSourceFields, configPathProblem, refFormatProblem, repoRefProblem } from '../../src/domain/source-fields.js';

/** What the real git says of each name (exit 0: valid), a few processes at a time. */
async function gitAccepts(names: string[]): Promise<boolean[]> {
  const verdicts: boolean[] = new Array(names.length);
  let next = 0;
  const worker = async () => {
    while (next < names.length) {
      const index = next++;
      verdicts[index] = await new Promise<boolean>((resolve, reject) => {
        const args = ['check-ref-format', '--allow-onelevel', names[index] as string];
        execFile('git', args, { env: { PATH: process.env.PATH, LC_ALL: 'C' } }, (error) => {
          if (!error) return resolve(true);
          if (error.code === 1) return resolve(false);
          reject(error);
        });
      });
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  return verdicts;
}

async function assertAgreesWithGit(names: string[]): Promise<void> {
  const verdicts = await gitAccepts(names);
  const disagreements = names.filter((name, index) => (refFormatProblem(name) === null) !== verdicts[index]);
  assert.deepEqual(disagreements, [], 'names on which the rule and git disagree');
}

// The characters git's rules are about, plus ordinary and non-ASCII ones.
const ALPHABET = [
  'a',
  'b',
  'k',
  'l',
  'o',
  'c',
  '0',
  '.',
  '/',
  '@',
  '{',
  '}',
  '-',
  '_',
  '~',
  '^',
  ':',
  '?',
  '*',
  '[',
  '\\',
  ' ',
  '\t',
  '\x01',
  '\x7f',
  'é',
  '😀',
];
const LOCK_PIECES = ['.lock', '..', '@{', '/.', './', '//'];

describe('repo_ref rule', () => {
  it('agrees with `git check-ref-format --allow-onelevel` on generated names', async () => {
    const piece = fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...ALPHABET) }, { weight: 1, arbitrary: fc.constantFrom(...LOCK_PIECES) });
    // git reads a leading '-' as an option of the command itself; the rule refuses those anyway.
    const name = fc
      .array(piece, { minLength: 0, maxLength: 12 })
      .map((pieces) => pieces.join(''))
      .filter((candidate) => !candidate.startsWith('-'));
    // Sampled rather than fc.assert: one git process per name is slow, so they run a few at a time.
    await assertAgreesWithGit(fc.sample(name, 200));
  });

  it('agrees with git on the names its rules are about', async () => {
    await assertAgreesWithGit([
      'main',
      'feature/x',
      'v1.0',
      'refs/heads/main',
      'a'.repeat(40),
      'release-2024.1',
      'é/ü',
      '@',
      '@a',
      'a@{1}',
      'a.lock',
      'a.lock/b',
      'a/.b',
      '.a',
      'a.',
      'a/',
      '/a',
      'a//b',
      'a..b',
      'a b',
      'a~1',
      'a^',
      'a:b',
      'a?',
      'a*',
      'a[',
      'a\\b',
      'a\x7f',
      'a.lock.',
      'a.locked',
      '{a}',
    ]);
  });

  it('also refuses options, HEAD, refs that are neither branches nor tags, NUL and broken Unicode', () => {
    for (const ref of ['main', 'v1.0', 'refs/heads/main', 'refs/tags/v1.0', 'a1b2c3d', '0'.repeat(40), 'f'.repeat(64)]) {
      assert.equal(repoRefProblem(ref), null, ref);
    }
    for (const ref of ['-x', '--upload-pack=touch /tmp/x', 'HEAD', 'refs/pull/1/head', 'refs/berth/commits/abc', 'refs/heads', 'a\0b', 'a\ud800b', '']) {
      assert.notEqual(repoRefProblem(ref), null, JSON.stringify(ref));
    }
  });
});

describe('graph_config_path rule', () => {
  it('takes paths inside the checkout and refuses the ones that leave it or name nothing', () => {
    for (const good of [
      'langgraph.json',
      './langgraph.json',
      'agent/langgraph.json',
      'a//b/langgraph.json',
      'dir.with..dots/x.json',
      '..json',
      'C:langgraph.json',
    ]) {
      assert.equal(configPathProblem(good), null, good);
    }
    for (const bad of [
      '../langgraph.json',
      'agent/../../etc/passwd',
      '..',
      '/etc/passwd',
      '//host/share/x.json',
      'C:/x/langgraph.json',
      'file:///etc/passwd',
      'agent\\langgraph.json',
      '..\\x',
      'a\0b',
      'a\nb',
      'agent/',
      '.',
      './',
      'a\udc00',
    ]) {
      assert.notEqual(configPathProblem(bad), null, JSON.stringify(bad));
    }
  });
});

describe('checkRevisionSourceFields', () => {
  it('answers a 422 naming each offending field as the client spelled it', () => {
    assert.doesNotThrow(() => checkRevisionSourceFields({ repo_ref: 'main', langgraph_config_path: 'agent/langgraph.json' }));
    assert.doesNotThrow(() => checkRevisionSourceFields(null));
    assert.throws(
      () => checkRevisionSourceFields({ repo_ref: '--upload-pack=x', graph_config_path: '../x', langgraph_config_path: '/abs' }),
      (error: unknown) => {
        assert.ok(error instanceof DomainError);
        assert.equal(error.code, 'validation_error');
        assert.deepEqual(
          error.issues.map((issue) => issue.loc),
          [
            ['body', 'source_revision_config', 'repo_ref'],
            ['body', 'source_revision_config', 'graph_config_path'],
            ['body', 'source_revision_config', 'langgraph_config_path'],
          ],
        );
        assert.ok(error.issues.every((issue) => issue.type === 'value_error' && issue.msg.startsWith('Value error, ')));
        return true;
      },
    );
  });
});

describe('the default branch a code host names', () => {
  it('becomes repo_ref only when git would read it as a branch', () => {
    assert.equal(completeRevisionConfig('codehost', {}, { repoDefaultBranch: 'trunk' }).repo_ref, 'trunk');
    for (const branch of ['--upload-pack=touch /tmp/x', 'a..b', 'HEAD']) {
      assert.throws(
        () => completeRevisionConfig('codehost', {}, { repoDefaultBranch: branch }),
        (error: unknown) => error instanceof DomainError && error.code === 'source_config_invalid' && /default branch/.test(error.message),
        branch,
      );
    }
    // A repo_ref given by the client is checked as sent; the default is not consulted.
    assert.equal(completeRevisionConfig('codehost', { repo_ref: 'main' }, { repoDefaultBranch: '-x' }).repo_ref, 'main');
  });
});
