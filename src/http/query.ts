import { invalidField } from '../domain/errors.js';
import { isUuid } from '../domain/ids.js';

/**
 * Splits a comma-separated query value (`a,b`; clients also send `%2C`) and checks each
 * item, answering FastAPI-style 422s that point at the bad item.
 */
export function commaList(value: string | undefined, name: string): string[] | undefined;
export function commaList<T extends string>(value: string | undefined, name: string, allowed: readonly T[]): T[] | undefined;
export function commaList(value: string | undefined, name: string, allowed?: readonly string[]): string[] | undefined {
  if (value === undefined) return undefined;
  const items = value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  items.forEach((item, index) => {
    if (allowed && !allowed.includes(item)) {
      throw invalidField({
        type: 'enum',
        loc: ['query', name, index],
        msg: `Input should be ${allowed.map((a) => `'${a}'`).join(', ')}`,
        input: item,
      });
    }
  });
  return items;
}

export function uuidList(value: string | undefined, name: string): string[] | undefined {
  const items = commaList(value, name);
  items?.forEach((item, index) => {
    if (!isUuid(item)) throw invalidField({ type: 'uuid_parsing', loc: ['query', name, index], msg: 'Input should be a valid UUID', input: item });
  });
  return items?.map((item) => item.toLowerCase());
}
