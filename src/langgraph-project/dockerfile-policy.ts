import { GraphConfigError } from './graph-config-error.js';

/**
 * What a project's own Dockerfile lines (`dockerfile_lines` in langgraph.json) may not do.
 * The builder this host has (buildah 1.28) mounts the host's root file system for
 * `RUN --mount=type=bind,from=<stage>,source=<link to />` (CVE-2024-1753), and `--mount`
 * reaches Berth's caches and other stages' files in other ways too; `--network` and
 * `--security` would leave the step's sandbox. Berth's own generated lines use `--mount`
 * for its package cache only; the project's lines may use none of these flags, however
 * they are spelled or split across lines.
 */
const FORBIDDEN_FLAGS = ['mount', 'network', 'security', 'device'];

/** Refuses lines that use a forbidden flag, or that leave an instruction unfinished (it would swallow Berth's next line). */
export function checkDockerfileLines(lines: readonly string[]): void {
  const instructions = logicalInstructions(lines.join('\n'));
  if (instructions.unfinished) {
    throw new GraphConfigError(
      'dockerfile_lines ends inside an instruction (its last line ends with a backslash): finish the instruction, so that it does not run into the lines Berth adds after it.',
    );
  }
  for (const instruction of instructions.list) {
    // Flags may be anywhere in the joined text (ONBUILD RUN --mount, a flag after a comment line
    // inside a continuation), so look at every token that could be read as one.
    const flag = /(?:^|[\s"'[,])--([a-z-]+)/gi;
    for (const match of instruction.matchAll(flag)) {
      const name = (match[1] ?? '').toLowerCase();
      if (FORBIDDEN_FLAGS.includes(name)) {
        throw new GraphConfigError(
          `dockerfile_lines may not use --${name} (in "${truncate(instruction)}"): Berth's builds run each step in a sandbox that --${name} would reach out of. Install what the step needs with RUN without flags, or bake it into the base image.`,
        );
      }
    }
  }
}

/**
 * Joins physical lines into instructions as a Dockerfile parser does: a line ending in the
 * escape character continues on the next with nothing between them (so `--mo\` and `unt`
 * make `--mount`), and comment lines inside a continuation are dropped. The escape character is always the backslash here: a parser directive could only
 * change it on the Dockerfile's first line, which is Berth's.
 */
function logicalInstructions(text: string): { list: string[]; unfinished: boolean } {
  const list: string[] = [];
  let current = '';
  let continuing = false;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/\s+$/, '');
    if (continuing && /^\s*#/.test(line)) continue;
    if (!continuing && (/^\s*#/.test(line) || line.trim() === '')) continue;
    if (line.endsWith('\\')) {
      current += line.slice(0, -1);
      continuing = true;
      continue;
    }
    current += line;
    list.push(current.trim());
    current = '';
    continuing = false;
  }
  if (continuing && current.trim() !== '') list.push(current.trim());
  return { list, unfinished: continuing };
}

function truncate(text: string): string {
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}
