/** What to tell a person about anything thrown: its message when it is an Error (a thrown string or value as text otherwise). */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
