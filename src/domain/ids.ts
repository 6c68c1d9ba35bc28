const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Ids are UUIDs; stored in lower case, accepted in either case. */
export function isUuid(text: string): boolean {
  return UUID.test(text);
}
