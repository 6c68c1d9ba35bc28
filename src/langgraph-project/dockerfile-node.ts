// The Dockerfile of a JavaScript config (node_version set, no python_version).
//
// The `cli` layout is the LangGraph CLI's: add the whole project, install, build.
//
// The `cached` layout gives the same image but copies only the dependency manifests
// (package.json, the lock file in use, package-manager settings) and installs before adding
// the rest of the project. A builder caches a layer by its inputs, so a change to the
// sources alone then reuses the install layer instead of reinstalling every dependency,
// which is most of a rebuild's time. npm's download cache lives in a build cache mount
// (`RUN --mount=type=cache`, understood by buildah and BuildKit), so even a changed lock
// file downloads only what changed, and the cache stays out of the image. The other package
// managers keep their caches in places that depend on their version and settings, so they
// get no mount (a wrong target would silently cache nothing).
//
// The cached layout is only right when the install reads nothing but those manifests; for
// projects whose install needs more (workspaces, local `file:` packages, install scripts,
// patches, a Yarn Berry `.yarn` folder) or whose `node_modules` would be copied over the
// fresh install, the CLI's layout is used and the reason is returned.
import fs from 'node:fs/promises';
import path from 'node:path';
import { GraphConfigError } from './graph-config-error.js';
import { type NodeInstall, detectNodeInstall, isFile, isRecord, readPackageJson } from './node-package-manager.js';

export const PREBUILD_STEP =
  'RUN (test ! -f /api/langgraph_api/js/build.mts && echo "Prebuild script not found, skipping") || tsx /api/langgraph_api/js/build.mts';

export interface NodeDockerfileInput {
  readonly projectDir: string;
  readonly image: string;
  readonly dockerfileLines: readonly string[];
  readonly envLines: readonly string[];
  readonly installCommand?: string;
  readonly buildCommand?: string;
  /** The CLI's monorepo mode: the whole of this directory is the build context. */
  readonly buildContext?: string;
}

export async function nodeDockerfile(input: NodeDockerfileInput): Promise<string> {
  const installRoot = input.buildContext !== undefined ? await fs.realpath(input.buildContext) : input.projectDir;
  const install = input.installCommand || (await detectNodeInstall(installRoot)).command;
  let projectPath = `/deps/${path.basename(input.projectDir)}`;
  let contextPath = projectPath;
  let buildStep = PREBUILD_STEP;
  if (input.buildContext !== undefined) {
    contextPath = `/deps/${path.basename(input.buildContext)}`;
    const relative = path.relative(installRoot, input.projectDir);
    if (relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative)) {
      throw new GraphConfigError(`the configuration's directory ${input.projectDir} is not inside the build context ${input.buildContext}`);
    }
    projectPath = relative === '' ? contextPath : `${contextPath}/${relative}`;
    if (input.buildCommand) buildStep = `RUN ${input.buildCommand}`;
  }
  return [
    `FROM ${input.image}`,
    '',
    input.dockerfileLines.join('\n'),
    '',
    `ADD . ${contextPath}`,
    '',
    `WORKDIR ${contextPath}`,
    '',
    `RUN ${install}`,
    '',
    input.envLines.join('\n'),
    '',
    `WORKDIR ${projectPath}`,
    '',
    buildStep,
  ].join('\n');
}

export type CachedPlan = { readonly manifests: readonly string[]; readonly install: string } | { readonly reason: string };

/** The files the install step needs, or why the install needs more than manifests. */
export async function planCachedInstall(projectDir: string, installCommand?: string): Promise<CachedPlan> {
  const manifest = await readPackageJson(projectDir);
  if (manifest === null) return { reason: 'the project has no readable package.json' };
  const reason = (await projectReason(projectDir)) ?? manifestReason(manifest);
  if (reason !== null) return { reason };
  const detected: NodeInstall = await detectNodeInstall(projectDir);
  const manifests = ['package.json'];
  if (detected.lockFile !== null) manifests.push(detected.lockFile);
  for (const settings of PACKAGE_MANAGER_SETTINGS) {
    if (await isFile(path.join(projectDir, settings))) manifests.push(settings);
  }
  return { manifests, install: installCommand || detected.command };
}

/** Files that change what an install does, copied with the manifests when present. */
const PACKAGE_MANAGER_SETTINGS = ['npm-shrinkwrap.json', '.npmrc', '.yarnrc', '.yarnrc.yml', '.pnpmfile.cjs', 'bunfig.toml'];

async function projectReason(projectDir: string): Promise<string | null> {
  for (const [entry, reason] of [
    ['node_modules', 'the project has a node_modules folder, which adding the project would copy over the installed one'],
    ['pnpm-workspace.yaml', 'the project is a pnpm workspace'],
    ['.yarn', 'the project has a .yarn folder (Yarn Berry releases, plugins or patches)'],
    ['patches', 'the project has a patches folder'],
  ] as const) {
    if (await pathExists(path.join(projectDir, entry))) return reason;
  }
  return null;
}

const INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare'];
const DEPENDENCY_FIELDS = ['dependencies', 'devDependencies', 'optionalDependencies', 'peerDependencies', 'resolutions', 'overrides'];
const LOCAL_SPEC = /^(file:|link:|portal:|patch:|workspace:|\.{0,2}\/)/;

function manifestReason(manifest: Record<string, unknown>): string | null {
  if (manifest.workspaces !== undefined) return 'package.json declares workspaces';
  const scripts = isRecord(manifest.scripts) ? manifest.scripts : {};
  const script = INSTALL_SCRIPTS.find((name) => scripts[name] !== undefined);
  if (script !== undefined) return `package.json has a '${script}' script, which may read any project file`;
  if (manifest.patchedDependencies !== undefined || (isRecord(manifest.pnpm) && manifest.pnpm.patchedDependencies !== undefined)) {
    return 'package.json patches dependencies';
  }
  for (const field of DEPENDENCY_FIELDS) {
    const local = findLocalSpec(manifest[field]);
    if (local !== null) return `package.json ${field} names a local package ('${local}')`;
  }
  return null;
}

/** Looks through nested `overrides` too. */
function findLocalSpec(value: unknown): string | null {
  if (typeof value === 'string') return LOCAL_SPEC.test(value) ? value : null;
  if (!isRecord(value)) return null;
  for (const nested of Object.values(value)) {
    const found = findLocalSpec(nested);
    if (found !== null) return found;
  }
  return null;
}

async function pathExists(target: string): Promise<boolean> {
  try {
    await fs.lstat(target);
    return true;
  } catch {
    return false;
  }
}

export interface CachedNodeDockerfileInput extends NodeDockerfileInput {
  readonly manifests: readonly string[];
  readonly install: string;
}

export function cachedNodeDockerfile(input: CachedNodeDockerfileInput): string {
  const projectPath = `/deps/${path.basename(input.projectDir)}`;
  // The JSON form keeps file and folder names with spaces intact.
  const copy = `COPY ${JSON.stringify([...input.manifests, `${projectPath}/`])}`;
  const cacheMount = /^npm\s/.test(input.install) ? '--mount=type=cache,target=/root/.npm ' : '';
  return [
    `FROM ${input.image}`,
    '',
    input.dockerfileLines.join('\n'),
    '',
    `WORKDIR ${projectPath}`,
    '',
    '# -- Installing dependencies from the manifests alone, so source changes reuse this layer --',
    copy,
    `RUN ${cacheMount}${input.install}`,
    '# -- End of dependencies install --',
    '',
    `ADD . ${projectPath}`,
    '',
    input.envLines.join('\n'),
    '',
    PREBUILD_STEP,
  ].join('\n');
}
