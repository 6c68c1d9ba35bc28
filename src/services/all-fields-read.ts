/**
 * Takes what is left of a request once a use case has taken every field it reads (`const {
 * a, b, ...rest } = input`). A field added to the contract and not read by the use case is
 * left in `rest` and fails the type check here, instead of being accepted and ignored.
 */
export function allFieldsRead(rest: Record<string, never>): void {
  void rest;
}
