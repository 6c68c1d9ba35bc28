// How the LangGraph CLI reads a graph's import string (`./src/graph.ts:graph`,
// `my_pkg.graph:graph`): the language comes from the file extension before `:`.

const NODE_GRAPH_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs']);

export function isNodeGraphSpec(spec: string): boolean {
  return NODE_GRAPH_EXTENSIONS.has(pythonExtension(spec.split(':')[0] ?? ''));
}

/** `os.path.splitext(p)[1]`: leading dots of the file name do not start an extension. */
function pythonExtension(filePath: string): string {
  const base = filePath.slice(filePath.lastIndexOf('/') + 1).replace(/^\.+/, '');
  const dot = base.lastIndexOf('.');
  return dot >= 0 ? base.slice(dot) : '';
}

/** Python's `str.partition`: the text before the first separator and the text after it. */
export function splitOnce(text: string, separator: string): [string, string] {
  const at = text.indexOf(separator);
  return at < 0 ? [text, ''] : [text.slice(0, at), text.slice(at + separator.length)];
}

/** The CLI takes a module string for a file path when it has a path separator in it. */
export function looksLikeFilePath(module: string): boolean {
  return module.includes('/') || module.includes('\\');
}
