import { badRequest } from './errors.js';

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

/** Checks names are unique and not reserved; the message names the secret, never its value. */
export function validateSecrets(secrets: readonly Secret[]): void {
  const seen = new Set<string>();
  for (const { name } of secrets) {
    if (seen.has(name)) throw badRequest(`Duplicate secret name '${name}': each secret name may appear once.`);
    seen.add(name);
    if (RESERVED_SECRET_NAMES.has(name)) {
      throw badRequest(`Secret name '${name}' is reserved: the runtime sets it for every deployment. Use another name.`);
    }
  }
}

/** Same names with the same values, in any order. */
export function sameSecrets(a: readonly Secret[], b: readonly Secret[]): boolean {
  if (a.length !== b.length) return false;
  const byName = new Map(a.map((s) => [s.name, s.value]));
  return b.every((s) => byName.get(s.name) === s.value);
}
