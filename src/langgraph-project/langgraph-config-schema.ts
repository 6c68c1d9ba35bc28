// The shape of langgraph.json's documented fields. Unknown fields are allowed (configs carry
// fields newer than this list). Each schema's `description` is the phrase an error shows
// ("must be …"). Nulls are accepted where the LangGraph CLI treats null as absent, and
// refused where the CLI would write a broken Dockerfile (`:None` tags) or crash.
import type { ErrorObject, ValidateFunction } from 'ajv';
import { type Static, type TSchema, Type } from 'typebox';
import { cachedValidator } from '../schema-code-cache.js';

const text = (description: string) => Type.String({ description });
const nullable = <T extends TSchema>(schema: T, description: string) => Type.Union([schema, Type.Null()], { description });
const stringList = Type.Array(text('a string'), { description: 'a list of strings' });
const withPath = (field: string) =>
  Type.Object({ [field]: Type.Optional(text(`a string like './file.py:name'`)) }, { description: `an object with '${field}'` });

const graphSpec = Type.Union(
  [text('a string'), Type.Object({ path: text('a string'), description: Type.Optional(nullable(Type.String(), 'a string or null')) })],
  { description: `a string like './src/graph.py:graph' or an object with a 'path'` },
);

const envValue = Type.Union([Type.String(), Type.Number(), Type.Boolean()], { description: 'a string' });

export const LangGraphConfigSchema = Type.Object(
  {
    graphs: Type.Record(Type.String(), graphSpec, { description: `an object naming graphs, e.g. {"agent": "./src/graph.py:graph"}` }),
    dependencies: nullable(stringList, 'a list of strings'),
    dockerfile_lines: stringList,
    env: nullable(Type.Union([Type.String(), Type.Record(Type.String(), envValue)]), 'a path to an env file or an object of variable names and values'),
    python_version: text(`a string like "3.11"`),
    node_version: text(`a string like "20"`),
    api_version: nullable(Type.String(), `a string like "0.2"`),
    base_image: nullable(Type.String(), 'an image name'),
    image_distro: Type.String({ description: `one of 'debian', 'wolfi', 'bookworm'` }),
    pip_config_file: nullable(Type.String(), 'a path to a pip config file'),
    pip_installer: Type.String({ description: `one of 'auto', 'pip', 'uv'` }),
    keep_pkg_tools: nullable(Type.Union([Type.Boolean(), Type.Array(Type.String())]), `true, false or a list of 'pip', 'setuptools', 'wheel'`),
    auth: nullable(withPath('path'), `an object with 'path'`),
    encryption: nullable(withPath('path'), `an object with 'path'`),
    checkpointer: nullable(withPath('path'), 'an object'),
    http: nullable(withPath('app'), 'an object'),
    store: nullable(Type.Object({}), 'an object'),
    webhooks: nullable(Type.Object({}), 'an object'),
    ui: nullable(Type.Record(Type.String(), text('a path to a UI file')), 'an object of UI names and file paths'),
    ui_config: nullable(Type.Object({}), 'an object'),
    source: nullable(Type.Object({}), `an object like {"kind": "uv", "root": "."}`),
    _INTERNAL_docker_tag: nullable(Type.String(), 'a string'),
  },
  { description: 'a JSON object' },
);

/** Each top-level field is optional; `validate_config`'s defaults are applied after validation. */
export type LangGraphConfigDocument = Partial<Static<typeof LangGraphConfigSchema>>;

// Compiled on first use, not on import: most processes that load this module (every server)
// never read a langgraph.json, and compiling it costs ~0.15 s of CPU (kept by the code cache).
let validateDocument: ValidateFunction | undefined;

function documentValidator(): ValidateFunction {
  validateDocument ??= cachedValidator({ allErrors: false, verbose: true, strict: false, allowUnionTypes: true }, Type.Partial(LangGraphConfigSchema));
  return validateDocument;
}

export interface SchemaIssue {
  /** e.g. `graphs.agent`, `dependencies[0]`, or '' for the document itself */
  field: string;
  message: string;
}

export function checkDocumentShape(document: unknown): SchemaIssue | null {
  const validate = documentValidator();
  if (validate(document)) return null;
  const errors = validate.errors ?? [];
  // The deepest failure says best where the problem is (`dependencies[1]`, not `dependencies`).
  // At that depth a union reports its branches first and itself last; the outermost union
  // with a description says best what was expected.
  const depth = (error: ErrorObject) => error.instancePath.split('/').length;
  const deepest = Math.max(...errors.map(depth));
  const candidates = errors.filter((error) => depth(error) === deepest);
  const described = (error: ErrorObject) => typeof (error.parentSchema as { description?: unknown } | undefined)?.description === 'string';
  const chosen = [...candidates].reverse().find((error) => error.keyword === 'anyOf' && described(error)) ?? candidates[0];
  if (chosen === undefined) return { field: '', message: 'is not a valid configuration' };
  return { field: fieldName(chosen.instancePath), message: describe(chosen) };
}

function describe(error: ErrorObject): string {
  if (error.keyword === 'required') return `'${String(error.params.missingProperty)}' is required`;
  const description = (error.parentSchema as { description?: unknown } | undefined)?.description;
  return typeof description === 'string' ? `must be ${description}` : (error.message ?? 'is invalid');
}

const LIST_FIELDS = new Set(['dependencies', 'dockerfile_lines', 'keep_pkg_tools']);

/** `/graphs/agent` → `graphs.agent`; `/dependencies/0` → `dependencies[0]`. */
function fieldName(instancePath: string): string {
  const [top = '', ...rest] = instancePath
    .slice(1)
    .split('/')
    .map((part) => part.replaceAll('~1', '/').replaceAll('~0', '~'));
  if (LIST_FIELDS.has(top) && rest.length === 1) return `${top}[${rest[0]}]`;
  return [top, ...rest].join('.');
}
