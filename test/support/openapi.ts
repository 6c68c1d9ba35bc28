/** A schema of the OpenAPI document, with a `$ref` to `#/components/schemas/…` followed. */
export function resolved(doc: any, schema: any): any {
  const ref = schema?.$ref as string | undefined;
  if (!ref) return schema;
  const name = ref.replace('#/components/schemas/', '');
  const target = doc.components?.schemas?.[name];
  if (!target) throw new Error(`${ref} does not resolve`);
  return resolved(doc, target);
}
