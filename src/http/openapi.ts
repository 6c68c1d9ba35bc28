/**
 * Shapes the generated OpenAPI document for SDK generators: every schema written with a
 * `title` in `contract/` is stated once under `components/schemas` and referenced by
 * `$ref` wherever it appears. Routes keep inline TypeBox schemas (Fastify validates and
 * serialises with them); only the published document changes.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

export function withNamedSchemas<T extends object>(document: T, errorSchema: object): T {
  const doc = document as unknown as JsonObject;
  const named = new Map<string, JsonObject>();
  const paths = hoist(withSharedErrors(doc.paths ?? {}, hoist(errorSchema as JsonObject, named)), named);
  const existing = ((doc.components as JsonObject | undefined)?.schemas as JsonObject | undefined) ?? {};
  const schemas = Object.fromEntries([...Object.entries(existing), ...[...named].sort(([a], [b]) => a.localeCompare(b))]);
  return { ...doc, paths, components: { ...((doc.components as JsonObject | undefined) ?? {}), schemas } } as unknown as T;
}

function hoist(node: Json, named: Map<string, JsonObject>): Json {
  if (Array.isArray(node)) return node.map((item) => hoist(item, named));
  if (node === null || typeof node !== 'object') return node;
  const children: JsonObject = {};
  for (const [key, value] of Object.entries(withDefaultsOptional(node))) children[key] = hoist(value, named);
  const title = children.title;
  if (typeof title !== 'string') return children;

  // `Nullable(X)` writes X with `null` added to its type: reference X and allow null beside it.
  const types = children.type;
  if (Array.isArray(types) && types.includes('null')) {
    const others = types.filter((type) => type !== 'null');
    const base = { ...children, type: others.length === 1 ? (others[0] as Json) : others };
    return { anyOf: [register(title, base, named), { type: 'null' }] };
  }
  return register(title, children, named);
}

/** Keeps the first schema of a title; a later one must be the same schema (its description may differ). */
function register(title: string, schema: JsonObject, named: Map<string, JsonObject>): JsonObject {
  const known = named.get(title);
  if (!known) named.set(title, schema);
  else if (canonical(known) !== canonical(schema)) throw new Error(`Two different schemas are titled '${title}'; give one of them another title.`);
  const ref: JsonObject = { $ref: `#/components/schemas/${title}` };
  const description = schema.description;
  return known && typeof description === 'string' && description !== known.description ? { ...ref, description } : ref;
}

function canonical(schema: JsonObject): string {
  const { description: _description, ...rest } = schema;
  return JSON.stringify(rest);
}

/**
 * Error answers share one `Error` schema (its `code` is the whole ErrorCode enum); which codes
 * a response can carry is listed in its description and in `x-error-codes`.
 */
function withSharedErrors(paths: Json, errorRef: Json): Json {
  const result: JsonObject = {};
  for (const [path, operations] of Object.entries(paths as JsonObject)) {
    const methods: JsonObject = {};
    for (const [method, operation] of Object.entries(operations as JsonObject)) {
      const responses = (operation as JsonObject).responses as JsonObject | undefined;
      methods[method] = responses
        ? {
            ...(operation as JsonObject),
            responses: Object.fromEntries(Object.entries(responses).map(([status, response]) => [status, sharedError(response as JsonObject, errorRef)])),
          }
        : operation;
    }
    result[path] = methods;
  }
  return result;
}

function sharedError(response: JsonObject, errorRef: Json): JsonObject {
  const content = response.content as JsonObject | undefined;
  const schema = (content?.['application/json'] as JsonObject | undefined)?.schema as JsonObject | undefined;
  const codes = ((schema?.properties as JsonObject | undefined)?.code as JsonObject | undefined)?.enum;
  if (!schema || schema.title !== undefined || !Array.isArray(codes)) return response;
  return { ...response, 'x-error-codes': codes, content: { 'application/json': { schema: errorRef } } };
}

/**
 * A field or parameter with a default need not be sent: the server fills it in before it
 * validates, so the document lists it as optional (the schemas require it so that handlers
 * see it filled in).
 */
function withDefaultsOptional(node: JsonObject): JsonObject {
  const schema = node.schema as JsonObject | undefined;
  if (typeof node.in === 'string' && node.required === true && schema && 'default' in schema) return { ...node, required: false };
  const properties = node.properties as JsonObject | undefined;
  if (!Array.isArray(node.required) || !properties) return node;
  const required = node.required.filter((name) => !(typeof name === 'string' && 'default' in ((properties[name] as JsonObject | undefined) ?? {})));
  return required.length === node.required.length ? node : { ...node, required };
}
