// Python's shlex.quote, which the LangGraph CLI applies to one path in its Dockerfile; the
// output must match it character for character, so this follows its rules exactly.
const UNSAFE = /[^\w@%+=:,./-]/;

export function shellQuote(text: string): string {
  if (text === '') return "''";
  if (!UNSAFE.test(text)) return text;
  return `'${text.replaceAll("'", `'"'"'`)}'`;
}
