// Python's pathlib, lexically (PurePosixPath): the CLI joins and compares some paths without
// resolving them, so `./x/../y` keeps its `..`, and Berth must do the same to write the same
// Dockerfile. Node's `path.join` would collapse `..` and change the result.

/** `PurePosixPath(base) / relative`: drops `.` and empty segments, keeps `..`. */
export function pureJoin(base: string, relative: string): string {
  const start = relative.startsWith('/') ? [] : splitParts(base);
  const parts = [...start, ...splitParts(relative)];
  return `/${parts.join('/')}`;
}

/** `PurePosixPath(path).is_relative_to(base)` for absolute paths. */
export function pureIsRelativeTo(candidate: string, base: string): boolean {
  const candidateParts = splitParts(candidate);
  const baseParts = splitParts(base);
  return baseParts.every((part, index) => candidateParts[index] === part);
}

/** `PurePosixPath(path).relative_to(base).as_posix()`; call only when `pureIsRelativeTo` holds. */
export function pureRelativeTo(candidate: string, base: string): string {
  const rest = splitParts(candidate).slice(splitParts(base).length);
  return rest.length === 0 ? '.' : rest.join('/');
}

function splitParts(text: string): string[] {
  return text.split('/').filter((part) => part !== '' && part !== '.');
}
