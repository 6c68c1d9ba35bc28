/**
 * A text for use inside a LIKE pattern with `escape '\'`: `%`, `_` and the escape
 * character itself match only themselves.
 */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}
