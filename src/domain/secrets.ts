import { fail, invalidField } from './errors.js';
import { PLATFORM_VARIABLES } from './platform-env.js';

export interface Secret {
  name: string;
  value: string;
}

/**
 * Environment variables the runtime sets itself; a deployment may not override them.
 * The list is the one real clients strip before sending (real-clients.md 4.10, "always
 * reserved"). The second list there applies only to the hosted service, not to a
 * self-hosted control plane such as Berth.
 */
export const RESERVED_SECRET_NAMES: ReadonlySet<string> = new Set([
  ...PLATFORM_VARIABLES,
  'LANGCHAIN_TRACING_V2',
  'LANGSMITH_TRACING_V2',
  'LANGCHAIN_ENDPOINT',
  'LANGCHAIN_PROJECT',
  'LANGSMITH_PROJECT',
  'LANGSMITH_LANGGRAPH_GIT_REPO',
  'LANGGRAPH_GIT_REPO_PATH',
  'LANGCHAIN_API_KEY',
  'LANGSMITH_CONTROL_PLANE_API_KEY',
  'POSTGRES_URI',
  'POSTGRES_PASSWORD',
  'DATABASE_URI',
  'LANGSMITH_LANGGRAPH_GIT_REF',
  'LANGSMITH_LANGGRAPH_GIT_REF_SHA',
  'LANGGRAPH_AUTH_TYPE',
  'LANGSMITH_AUTH_ENDPOINT',
  'LANGSMITH_TENANT_ID',
  'LANGSMITH_AUTH_VERIFY_TENANT_ID',
  'LANGSMITH_HOST_PROJECT_ID',
  'LANGSMITH_HOST_PROJECT_NAME',
  'LANGSMITH_HOST_REVISION_ID',
  'LOG_JSON',
  'LOG_DICT_TRACEBACKS',
  'REDIS_URI',
  'LANGCHAIN_CALLBACKS_BACKGROUND',
  'DD_TRACE_PSYCOPG_ENABLED',
  'DD_TRACE_REDIS_ENABLED',
  'LANGSMITH_DEPLOYMENT_NAME',
  'LANGGRAPH_CLOUD_LICENSE_KEY',
]);

/**
 * Bytes of names and values (UTF-8) one deployment's secrets may take in all. The count is
 * bounded by the schema (200), but each value may be long; every answer about the
 * deployment carries them, so this bounds those answers and list pages.
 */
/** As many secrets as a full set in a request body may hold (contract/deployments.ts). */
export const MAX_SECRETS = 200;
export const MAX_SECRETS_BYTES = 1024 * 1024;

/**
 * Checks names are unique and not reserved, and the total size; the message names the
 * secret, never its value.
 */
export function validateSecrets(secrets: readonly Secret[]): void {
  const seen = new Set<string>();
  let bytes = 0;
  for (const { name, value } of secrets) {
    if (seen.has(name)) throw fail('secrets_invalid', `Duplicate secret name '${name}': each secret name may appear once.`);
    seen.add(name);
    if (RESERVED_SECRET_NAMES.has(name)) {
      throw fail('secrets_invalid', `Secret name '${name}' is reserved: the runtime sets it for every deployment. Use another name.`);
    }
    bytes += Buffer.byteLength(name) + Buffer.byteLength(value);
  }
  if (bytes > MAX_SECRETS_BYTES) {
    throw invalidField({
      type: 'value_error',
      loc: ['body', 'secrets'],
      msg: `Value error, the secrets take ${bytes} bytes (names and values, UTF-8); at most ${MAX_SECRETS_BYTES} bytes (1 MiB) in all are accepted`,
      input: '[redacted]',
      ctx: { max_bytes: MAX_SECRETS_BYTES, actual_bytes: bytes },
    });
  }
}

/** Same names with the same values, in any order. */
export function sameSecrets(a: readonly Secret[], b: readonly Secret[]): boolean {
  if (a.length !== b.length) return false;
  const byName = new Map(a.map((s) => [s.name, s.value]));
  return b.every((s) => byName.get(s.name) === s.value);
}

/** A change of a deployment's secrets by name, as a script or the dashboard sends it without knowing the other values. */
export interface SecretChange {
  set: readonly Secret[];
  remove: readonly string[];
}

/**
 * The secret set after `change`: `set` replaces or adds by name, `remove` drops names (a name
 * that is not there is already removed). A name both set and removed is ambiguous (422); the
 * result passes the same checks as a full set sent by PATCH.
 */
export function mergeSecrets(current: readonly Secret[], change: SecretChange): Secret[] {
  const removed = new Set(change.remove);
  change.set.forEach(({ name }, index) => {
    if (removed.has(name)) {
      throw invalidField({
        type: 'value_error',
        loc: ['body', 'set', index, 'name'],
        msg: `Value error, '${name}' is both set and removed; send it in one of them`,
        input: name,
      });
    }
  });
  validateSecrets(change.set);
  const given = new Map(change.set.map((secret) => [secret.name, secret.value]));
  const kept = current.filter(({ name }) => !removed.has(name) && !given.has(name));
  const merged = [...kept, ...change.set.map(({ name, value }) => ({ name, value }))];
  if (merged.length > MAX_SECRETS) {
    throw invalidField({
      type: 'too_long',
      loc: ['body', 'set'],
      msg: `List should have at most ${MAX_SECRETS} items after merging, not ${merged.length}`,
      input: '[redacted]',
      ctx: { max_length: MAX_SECRETS, actual_length: merged.length },
    });
  }
  validateSecrets(merged);
  return merged;
}
