/** A problem with a langgraph.json or the files it names; the message is for the user. */
export class GraphConfigError extends Error {
  override readonly name = 'GraphConfigError';
}
