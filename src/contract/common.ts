import { type Static, type TSchema, Type } from 'typebox';

/**
 * `T | null` as a JSON-schema type list rather than `anyOf`: validation errors then name
 * the real problem ("should be a valid string") instead of one error per branch.
 */
export function Nullable<T extends TSchema>(schema: T) {
  const raw = schema as unknown as { type?: string | string[]; enum?: unknown[] };
  // A schema without a `type` of its own (a union) can only take null as one more choice.
  if (raw.type === undefined) return Type.Unsafe<Static<T> | null>(Type.Union([schema, Type.Null()]));
  const type = [...(Array.isArray(raw.type) ? raw.type : [raw.type]), 'null'];
  const nullable = { ...schema, type, ...(raw.enum ? { enum: [...raw.enum, null] } : {}) };
  return Type.Unsafe<Static<T> | null>(nullable);
}

/** Optional in requests and nullable, as real clients send explicit nulls for "not set". */
export const OptionalNullable = <T extends TSchema>(schema: T) => Type.Optional(Nullable(schema));

export const Uuid = (options: { description?: string } = {}) => Type.String({ format: 'uuid', ...options });
export const DateTime = (description?: string) => Type.String({ format: 'date-time', ...(description ? { description } : {}) });

/** A free-form JSON object (labels, volume sources, container specs …). */
export const AnyObject = (description?: string) => Type.Record(Type.String(), Type.Unknown(), description ? { description } : {});

/** Far beyond any real list; keeps the value a 32-bit integer for both databases. */
export const MAX_OFFSET = 2_147_483_647;

export const PaginationQuery = {
  limit: Type.Integer({ minimum: 1, maximum: 100, default: 20, description: 'Maximum number of resources returned.' }),
  offset: Type.Integer({ minimum: 0, maximum: MAX_OFFSET, default: 0, description: 'Pagination offset.' }),
};

/** `offset` in the answer is where the next page starts. */
export const Envelope = <T extends TSchema>(item: T) =>
  Type.Object(
    {
      resources: Type.Array(item),
      offset: Type.Integer({ description: 'Pass as `offset` to get the next page.' }),
    },
    { title: `${(item as { title?: string }).title ?? 'Item'}Page` },
  );

/** `?flag=true|false|1|0` as FastAPI reads booleans. */
export const QueryBoolean = (description: string) => Type.Optional(Type.Boolean({ description }));

/** A string enum as `{type: string, enum}` (not `anyOf` of constants): one clear error when it fails. */
export const StringEnum = <const T extends readonly string[]>(values: T, options: { description?: string; default?: T[number] } = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
