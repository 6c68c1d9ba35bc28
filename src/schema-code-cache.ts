import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Options as AjvOptions, ValidateFunction } from 'ajv';

const require = createRequire(import.meta.url);

/**
 * The generated code of compiled schemas, kept on disk between processes. Generating a
 * route's validator (ajv) and serializer (fast-json-stringify) is most of what a server's
 * first start costs (0.7–0.9 s of CPU for every route); evaluating code generated before
 * takes a fraction of it. Every test process and every server a test spawns starts one.
 *
 * The cache lives in `node_modules/.cache/` beside the packages that generated the code, as
 * other tools keep theirs: whoever can write there can already change the code that runs,
 * so the cache adds no one who could. A file is named by the hash of everything the code
 * depends on (the schema, the options, the generators' versions), is written whole through a
 * rename, and a file that cannot be read or evaluated is compiled again. Where the folder is
 * not writable (a read-only image), schemas are compiled as before.
 */
export interface SchemaCodeCache {
  /** `generate` gives the module's source; the answer is its `module.exports`. */
  load<T>(identity: string, generate: () => string): T;
}

const FORMAT = 1;

function generatorVersions(): string {
  return ['ajv', 'ajv-formats', 'fast-json-stringify'].map((name) => `${name}@${(require(`${name}/package.json`) as { version: string }).version}`).join(' ');
}

function evaluateModule<T>(source: string): T {
  const module = { exports: {} as unknown };
  // The code is what ajv and fast-json-stringify generate: a CommonJS module that requires
  // their runtime helpers, so it is given a require that resolves from here.
  new Function('module', 'exports', 'require', source)(module, module.exports, require);
  return module.exports as T;
}

function writeWhole(file: string, source: string): void {
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  try {
    fs.writeFileSync(temporary, source, { mode: 0o644 });
    fs.renameSync(temporary, file);
  } catch {
    fs.rmSync(temporary, { force: true });
  }
}

export function diskSchemaCodeCache(directory: string): SchemaCodeCache {
  const salt = `${FORMAT} ${generatorVersions()}`;
  let writable = true;
  try {
    fs.mkdirSync(directory, { recursive: true });
  } catch {
    writable = false;
  }
  return {
    load<T>(identity: string, generate: () => string): T {
      const file = path.join(directory, `${createHash('sha256').update(salt).update('\0').update(identity).digest('hex')}.cjs`);
      try {
        return evaluateModule<T>(fs.readFileSync(file, 'utf8'));
      } catch {
        // Absent, or left unreadable by something else: generate it again.
      }
      const source = generate();
      const loaded = evaluateModule<T>(source);
      if (writable) writeWhole(file, source);
      return loaded;
    },
  };
}

/** The folder beside the generators' own packages, or none when they cannot be found. */
function defaultDirectory(): string | undefined {
  const nodeModules = path.dirname(path.dirname(require.resolve('ajv/package.json')));
  return path.basename(nodeModules) === 'node_modules' ? path.join(nodeModules, '.cache', 'berth-schemas') : undefined;
}

let shared: SchemaCodeCache | undefined;

/** The process's cache: on disk beside the generators, or, where there is no such folder, code evaluated and not kept. */
export function schemaCodeCache(): SchemaCodeCache {
  if (!shared) {
    const directory = defaultDirectory();
    shared = directory ? diskSchemaCodeCache(directory) : { load: (_identity, generate) => evaluateModule(generate()) };
  }
  return shared;
}

export interface ValidatorOptions extends Omit<AjvOptions, 'code' | 'formats'> {
  /** ajv-formats' formats (date-time, uri, …) known to the validator. */
  standardFormats?: boolean;
}

// One compiler per set of options, made only when some schema's code must be generated: a
// process that finds every schema's code kept never loads ajv's compiler.
const compilers = new Map<string, { compile(schema: object): string }>();

function ajvCompiler(options: ValidatorOptions): { compile(schema: object): string } {
  const key = JSON.stringify(options);
  let compiler = compilers.get(key);
  if (!compiler) {
    const { standardFormats = false, ...ajvOptions } = options;
    const Ajv = (require('ajv') as typeof import('ajv')).default;
    const standaloneCode = (require('ajv/dist/standalone/index.js') as typeof import('ajv/dist/standalone/index.js')).default;
    // code.source: ajv keeps each function's source, which its standalone code is made from.
    const ajv = new Ajv({ ...ajvOptions, code: { source: true } });
    if (standardFormats) (require('ajv-formats') as typeof import('ajv-formats')).default(ajv);
    compiler = { compile: (schema) => standaloneCode(ajv, ajv.compile(schema)) };
    compilers.set(key, compiler);
  }
  return compiler;
}

/** An ajv validator of `schema` with these options, from the code cache when an earlier process generated it. */
export function cachedValidator(options: ValidatorOptions, schema: object): ValidateFunction {
  return schemaCodeCache().load<ValidateFunction>(`ajv ${JSON.stringify(options)} ${JSON.stringify(schema)}`, () => ajvCompiler(options).compile(schema));
}
