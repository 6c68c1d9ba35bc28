/**
 * fast-check arbitraries built from JSON schemas (the route schemas as /openapi.json
 * publishes them), and the hostile strings every suite throws at the API.
 */
import fc from 'fast-check';
import { secretValue } from './examples.js';
import type { JsonSchema } from './support.js';

export const HOSTILE_STRINGS = [
  "'; DROP TABLE deployments; --",
  '" OR 1=1 --',
  "1' OR '1'='1",
  '%',
  '_',
  '\\',
  '%_%\\',
  '$(touch /tmp/berth-pwned)',
  '`id`',
  '| cat /etc/passwd',
  '&& rm -rf / ;',
  '${HOME}',
  '../../../etc/passwd',
  '..\\..\\windows\\win.ini',
  '<script>alert(1)</script>',
  '{{7*7}}',
  '%s%s%n%x',
  'a\u0000b',
  '\u0000',
  '\u0001\u0002\u001b[31m\u007f',
  'line\r\nX-Injected: 1',
  '\u202e\u2066override',
  '\ud800',
  'x\udfffy',
  '🦀🚀👩‍👩‍👧',
  'Ω≈ç√∫ 漢字 العربية',
  '\ufeffbom',
  'ｓｅｌｅｃｔ',
  '\t',
  ' ',
  '',
  'null',
  'NaN',
  '__proto__',
  'constructor',
  'toString',
  '-1',
  '1e309',
  '9'.repeat(400),
];

/** Fields whose values are secrets: generated values carry the marker, so echoes can be found. */
const SECRET_FIELDS = new Set(['value', 'client_secret']);

// ---------------------------------------------------------------------------------------
// Values from schemas

function stringFor(schema: JsonSchema): fc.Arbitrary<string> {
  const min = schema.minLength ?? 0;
  const max = schema.maxLength ?? 64;
  const fits = (s: string) => s.length >= min && s.length <= max;
  if (schema.format === 'uuid')
    return fc.oneof(
      fc.uuid(),
      fc.uuid().map((u) => u.toUpperCase()),
    );
  if (schema.format === 'date-time')
    return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
  if (schema.format === 'uri') return fc.webUrl().filter((u) => /^https?:\/\//.test(u) && fits(u));
  if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern)).filter(fits);
  return fc.oneof(
    fc.string({ minLength: min, maxLength: Math.min(max, 40) }),
    fc.string({ minLength: min, maxLength: Math.min(max, 20), unit: 'binary' }),
    fc.constantFrom(...HOSTILE_STRINGS.filter(fits).concat('x'.repeat(Math.max(min, 1)))),
  );
}

/** Values that satisfy a JSON schema (mostly: hostile strings still respect lengths and patterns). */
export function valueFor(schema: JsonSchema | undefined, key?: string): fc.Arbitrary<unknown> {
  if (!schema || Object.keys(schema).length === 0) return fc.jsonValue({ maxDepth: 2 });
  if (key && SECRET_FIELDS.has(key) && (schema.type === 'string' || (Array.isArray(schema.type) && schema.type.includes('string')))) {
    return fc.constant(null).map(() => secretValue());
  }
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...(alternatives as JsonSchema[]).map((s) => valueFor(s, key)));
  if (schema.allOf) {
    const merged = (schema.allOf as JsonSchema[]).reduce<JsonSchema>(
      (acc, s) => ({ ...acc, ...s, properties: { ...acc.properties, ...s.properties }, required: [...(acc.required ?? []), ...(s.required ?? [])] }),
      {},
    );
    return valueFor(merged, key);
  }
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...(schema.enum as unknown[]));
  const types: string[] = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length > 1) return fc.oneof(...types.map((type) => valueFor({ ...schema, type }, key)));
  switch (types[0]) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 100_000 });
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'string':
      return stringFor(schema);
    case 'array':
      return fc.array(valueFor(schema.items), { maxLength: Math.min(schema.maxItems ?? 3, 3) });
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
      const record = fc.record(Object.fromEntries(Object.entries(properties).map(([k, s]) => [k, valueFor(s, k)])), {
        requiredKeys: (schema.required ?? []) as string[],
      });
      const pattern = schema.patternProperties ? (Object.values(schema.patternProperties)[0] as JsonSchema) : undefined;
      const extra =
        pattern || schema.additionalProperties
          ? fc.dictionary(fc.string({ maxLength: 12 }), valueFor(pattern ?? (schema.additionalProperties === true ? {} : schema.additionalProperties)), {
              maxKeys: 3,
            })
          : fc.constant({});
      return fc.tuple(record, extra).map(([known, more]) => ({ ...more, ...known }));
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}
