/**
 * Turns the output of a failed image build into one message a person can act on: what
 * failed, why when a known cause is recognised, and what to change. Pure: it reads lines.
 */

const INSTALL_OVERRIDE = 'source_config.install_command';
/** Lines of output quoted when no known cause is recognised. */
const QUOTED_LINES = 5;

/** Optional native packages published per OS and CPU (esbuild, lightningcss, oxide, rollup, ...). */
const PLATFORM_PACKAGE =
  /(?:^|[-/])(?:darwin|win32|windows|android|freebsd|openbsd|netbsd|sunos|aix|wasm32|wasi|musl|gnueabihf|arm64|arm|ia32|ppc64|s390x|riscv64|loong64|mips64el)(?:[-/@]|$)/;

const NETWORK_CODES =
  /\b(ENOTFOUND|EAI_AGAIN|ETIMEDOUT|ECONNREFUSED|ECONNRESET|EHOSTUNREACH|ENETUNREACH|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|CERT_HAS_EXPIRED)\b/;

interface FailedStep {
  /** The instruction, e.g. `RUN npm ci`. */
  step?: string;
  exitCode?: number;
}

export function explainBuildFailure(tail: string[], exitCode: number | null): string {
  const failed = failedStep(tail);
  const where = failed.step ? ` at \`${failed.step}\`` : '';
  const status = failed.exitCode !== undefined ? ` (exit code ${failed.exitCode})` : exitCode !== null ? ` (the builder exited with code ${exitCode})` : '';
  const cause = knownCause(tail, failed);
  if (cause) return `The image build failed${where}${status}: ${cause}`;
  const quoted = lastOutput(tail);
  return `The image build failed${where}${status}.${quoted ? ` Last output: ${quoted}` : ''} The build log has the whole output.`;
}

function knownCause(tail: string[], failed: FailedStep): string | undefined {
  const text = tail.join('\n');

  if (/`npm ci` can only install packages when your package\.json and package-lock\.json/.test(text)) {
    const missing = [...text.matchAll(/Missing: (@?[^@\s]+)@\S* from lock file/g)].map((match) => match[1] ?? '');
    const platform = missing.filter((name) => PLATFORM_PACKAGE.test(name));
    if (platform.length > 0) {
      return (
        `npm ci refused the lock file because it lacks optional platform packages (${listSome(platform)}). ` +
        'The npm registry reachable from this machine does not have them, so the `npm install` that wrote the lock file left them out. ' +
        `Set ${INSTALL_OVERRIDE} to "npm install" (it installs what the registry offers), or regenerate package-lock.json where the full registry is reachable.`
      );
    }
    const which = missing.length > 0 ? ` (missing: ${listSome(missing)})` : '';
    return (
      `npm ci refused the lock file because package-lock.json does not match package.json${which}. ` +
      `Run \`npm install\` and commit the updated package-lock.json, or set ${INSTALL_OVERRIDE} to "npm install".`
    );
  }

  const notInRegistry =
    /npm (?:error|ERR!) 404 .*?'(@?[^'@\s]+)@?[^']*' is not in this registry/.exec(text) ??
    /npm (?:error|ERR!) 404 Not Found - GET \S+\/(@[^/\s]+%2f[^/\s]+|[^/\s]+)/.exec(text);
  if (notInRegistry) {
    const name = decodeURIComponent(notInRegistry[1] ?? '');
    return `the dependency ${name} is not in the npm registry this build can reach. Check its name in package.json, or make the package available to the registry (a private package needs registry settings in .npmrc).`;
  }

  const noVersion = /npm (?:error|ERR!) notarget No matching version found for (\S+?)\.?$/m.exec(text);
  if (noVersion) return `no published version matches ${noVersion[1]}. Change the version range in package.json.`;

  const network = /npm (?:error|ERR!)/.test(text) ? NETWORK_CODES.exec(text) : null;
  if (network) {
    return `npm could not reach the package registry from inside the build (${network[1]}). Check that the registry in .npmrc is reachable from this machine; the base image trusts the host's CA bundle.`;
  }

  if (/No compatible signature found in package metadata/.test(text)) {
    return (
      'corepack could not verify the yarn or pnpm version that package.json\'s "packageManager" field names: the npm registry reachable from this machine serves no signatures. ' +
      'Remove the version from "packageManager" (corepack then uses the version it pins), or opt out of the check with `ENV COREPACK_INTEGRITY_KEYS=0` in langgraph.json\'s dockerfile_lines, ' +
      `or set ${INSTALL_OVERRIDE} to an npm command.`
    );
  }

  const prebuild = tail.filter((line) => line.startsWith('prebuild: ')).at(-1);
  if (prebuild) return `${prebuild.slice('prebuild: '.length)}`;

  const base = baseImageProblem(tail);
  if (base) return base;

  if (/no space left on device/i.test(text))
    return 'the disk of the build machine is full. Free space (remove unused images, e.g. `podman image prune`) and build again.';

  if (failed.step?.startsWith('RUN ') && /(?:^|\s)(?:sh|\/bin\/sh): .*not found/m.test(text)) {
    const missing = /(?:sh|\/bin\/sh): (?:\d+: )?([^:\s]+): not found/m.exec(text)?.[1];
    if (missing)
      return `the command ${missing} is not in the base image. The JavaScript base image has node, npm, npx, tsx and busybox's tools; install anything else with npm, or set ${INSTALL_OVERRIDE}.`;
  }
  return undefined;
}

/** A FROM that names an image neither on this machine nor pullable. */
function baseImageProblem(tail: string[]): string | undefined {
  const errorLine = tail.find((line) =>
    /^(?:Error|error)\b.*(?:creating build container|initializing source|pinging container registry|image not known|manifest unknown|repository .* not found|pull access denied)/i.test(
      line,
    ),
  );
  if (!errorLine) return undefined;
  const from = [...tail].reverse().find((line) => /^STEP \d+\/\d+: FROM /i.test(line));
  const image = from?.replace(/^STEP \d+\/\d+: FROM\s+/i, '').split(/\s+/)[0];
  const named = image ? `the base image ${image}` : 'the base image';
  return (
    `${named} is not on this machine and could not be pulled (${errorLine.replace(/^(?:Error|error):\s*/, '').slice(0, 300)}). ` +
    'Build the JavaScript base image with scripts/build-base-images.sh, or name a base image that is present (BERTH_BASE_IMAGE_NODE).'
  );
}

function failedStep(tail: string[]): FailedStep {
  for (const line of [...tail].reverse()) {
    // buildah and podman
    const buildah = /building at STEP "(.+)": (?:exit status (\d+)|(.*))$/.exec(line);
    if (buildah) return { step: buildah[1], exitCode: buildah[2] !== undefined ? Number(buildah[2]) : undefined };
    // docker with BuildKit
    const buildkit = /process "\/bin\/sh -c (.+)" did not complete successfully: exit code: (\d+)/.exec(line);
    if (buildkit) return { step: `RUN ${buildkit[1]}`, exitCode: Number(buildkit[2]) };
    // docker's classic builder
    const classic = /The command '\/bin\/sh -c (.+)' returned a non-zero code: (\d+)/.exec(line);
    if (classic) return { step: `RUN ${classic[1]}`, exitCode: Number(classic[2]) };
  }
  return {};
}

/** Lines that are the builder talking (steps, layers, errors), not the build's own output. */
const BUILDER_CHATTER =
  /^(STEP \d+\/\d+:|Step \d+\/\d+ :|-->|\s*--->|COMMIT|Successfully|Removing intermediate container|Error:|error:|ERROR:|subprocess exited|The command '|#\d+ )/;

/** The last lines of the build's own output, without the builder's step and error lines. */
function lastOutput(tail: string[]): string {
  // BuildKit prefixes a step's output with "#<step> <seconds> ".
  const output = tail.map((line) => /^#\d+ \d+\.\d+ (.*)$/.exec(line)?.[1] ?? line).filter((line) => !BUILDER_CHATTER.test(line));
  return output
    .slice(-QUOTED_LINES)
    .map((line) => (line.length > 300 ? `${line.slice(0, 300)}…` : line))
    .join(' | ');
}

function listSome(names: string[]): string {
  const unique = [...new Set(names)];
  return unique.length > 4 ? `${unique.slice(0, 4).join(', ')} and ${unique.length - 4} more` : unique.join(', ');
}
