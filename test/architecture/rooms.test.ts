import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = path.join(ROOT, 'src');

/** Every folder directly under src/ is a room of the code. */
const rooms = readdirSync(SRC, { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);

const hasReadme = (room: string) => existsSync(path.join(SRC, room, 'README.md'));

function readme(room: string): string {
  return readFileSync(path.join(SRC, room, 'README.md'), 'utf8');
}

/** Every source file's text, once: the names a README may cite must be written somewhere in them. */
const sourceText = (function collect(dir: string): string {
  return readdirSync(dir, { withFileTypes: true })
    .map((entry) => {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) return collect(full);
      return /\.(ts|json)$/.test(entry.name) ? readFileSync(full, 'utf8') : '';
    })
    .join('\n');
})(SRC);

const FILE_NAME = /^[\w.@/-]+\.(ts|js|mjs|cjs|json|md|sh|yaml)$/;
/** camelCase or PascalCase with an inner capital: the shape of a function, class or type of ours. */
const CODE_NAME = /^[A-Za-z][a-z0-9]*[A-Z][A-Za-z0-9]*$/;

/** What a README names in `backticks` outside fenced code, and the names called or constructed in fenced code. */
function citations(text: string): { spans: string[]; called: string[] } {
  const fenced = [...text.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].map((match) => match[1] ?? '');
  const prose = text.replace(/```[a-z]*\n[\s\S]*?```/g, '');
  const spans = [...prose.matchAll(/`([^`\n]+)`/g)].map((match) => (match[1] ?? '').replace(/\(\)$/, ''));
  const called = fenced.flatMap((code) => [...code.matchAll(/(?:new\s+|\.|\b)([A-Za-z][A-Za-z0-9]*)\s*\(/g)].map((match) => match[1] ?? ''));
  return { spans, called };
}

/**
 * Whether a file of the checkout is at `file`. Run compiled (scripts/run-tests.ts), the tree holds a
 * JavaScript copy beside every TypeScript module: those copies are not the checkout's files.
 */
function inCheckout(file: string): boolean {
  return existsSync(file) && !(file.endsWith('.js') && existsSync(file.replace(/\.js$/, '.ts')));
}

/** A file name resolves from the room, from src/ or from the repository's root, in that order. */
function exists(room: string, name: string): boolean {
  return [path.join(SRC, room), SRC, ROOT].some((base) => inCheckout(path.join(base, name)));
}

test('every room of src/ has a README saying what it is for, what it may import and its entry points', () => {
  assert.ok(rooms.length > 10, `only ${rooms.length} folders found under ${SRC}`);
  const missing = rooms.filter((room) => !hasReadme(room));
  assert.deepEqual(missing, [], 'rooms without a README.md');
  for (const room of rooms) {
    const text = readme(room);
    assert.match(text, /^# \S/, `src/${room}/README.md starts with a title`);
    assert.match(text, /^## May import$/m, `src/${room}/README.md has a "## May import" section`);
    assert.match(text, /^## Entry points$/m, `src/${room}/README.md has a "## Entry points" section`);
  }
});

test('every file a README names exists, so the READMEs cannot rot', () => {
  const absent: string[] = [];
  for (const room of rooms.filter(hasReadme)) {
    for (const span of citations(readme(room)).spans) {
      if (FILE_NAME.test(span) && !exists(room, span)) absent.push(`src/${room}/README.md: ${span}`);
    }
  }
  assert.deepEqual(absent, []);
});

test('every function, class or type a README names is written in the sources', () => {
  const unknown: string[] = [];
  for (const room of rooms.filter(hasReadme)) {
    const { spans, called } = citations(readme(room));
    for (const name of [...spans.filter((span) => CODE_NAME.test(span)), ...called.filter((name) => CODE_NAME.test(name))]) {
      if (!new RegExp(`\\b${name}\\b`).test(sourceText)) unknown.push(`src/${room}/README.md: ${name}`);
    }
  }
  assert.deepEqual(unknown, []);
});

test('every source file docs/architecture.md names by its path exists', () => {
  const text = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
  // Paths with a folder, as the document writes them (from src/ or from the repository's root); `/…` are URLs.
  const named = [...text.matchAll(/`([^`\s]+)`/g)]
    .map((match) => match[1] ?? '')
    .filter((span) => span.includes('/') && !span.startsWith('/') && FILE_NAME.test(span));
  assert.ok(named.length > 50, `only ${named.length} paths found in docs/architecture.md`);
  assert.deepEqual(
    named.filter((name) => ![SRC, ROOT].some((base) => inCheckout(path.join(base, name)))),
    [],
  );
});

test('the checks see what they are meant to see', () => {
  const sample = 'Uses `index.ts` and `providerFor()`.\n\n```ts\nconst p = createCodehostProvider(settings);\nawait p.cloneAuth(url);\n```\n';
  const { spans, called } = citations(sample);
  assert.deepEqual(spans, ['index.ts', 'providerFor']);
  assert.deepEqual(called, ['createCodehostProvider', 'cloneAuth']);
  assert.ok(exists('codehost', 'index.ts') && exists('codehost', 'engine/worker.ts') && exists('codehost', 'docs/architecture.md'));
  assert.ok(!exists('codehost', 'no-such-file.ts'));
  assert.ok(CODE_NAME.test('createCodehostProvider') && !new RegExp('\\bcreateCodehostProvider\\b').test(sourceText));
});
