// The Dockerfile of a Python config (and of a config with Python and JavaScript graphs),
// as the LangGraph CLI writes it: PyPI packages first, then local requirements files, then
// each local package under /deps, one editable install over all of them, the runtime ENV
// lines, the JavaScript build when there are UI files or JS graphs, and finally a step that
// restores the server's own package and removes the packaging tools.
import path from 'node:path';
import type { BuildTool, LangGraphConfig } from './langgraph-config.js';
import { BUILD_TOOLS } from './langgraph-config.js';
import { detectNodeInstall } from './node-package-manager.js';
import { type OrderedJson, type OrderedObject, cloneOrdered } from './ordered-json.js';
import { rewriteImportPaths } from './python-import-paths.js';
import { type LocalDeps, assembleLocalDeps } from './python-local-deps.js';
import { shellQuote } from './shell-quote.js';

export interface PythonDockerfileInput {
  readonly config: LangGraphConfig;
  readonly projectDir: string;
  /** The base image without tag: decides between uv and pip. */
  readonly baseImage: string;
  readonly image: string;
  readonly runtimeEnvLines: (document: OrderedObject) => string[];
}

export interface PythonDockerfile {
  readonly dockerfile: string;
  readonly additionalContexts: ReadonlyMap<string, string>;
}

export async function pythonDockerfile(input: PythonDockerfileInput): Promise<PythonDockerfile> {
  const { config, projectDir } = input;
  const installer = resolveInstaller(config, input.baseImage);
  const installCommand = installer === 'uv' ? 'uv pip install --system' : 'pip install';
  const baseInstall = `PYTHONDONTWRITEBYTECODE=1 ${installCommand} --no-cache-dir -c /api/constraints.txt`;
  const pipInstall = config.pipConfigFile ? `PIP_CONFIG_FILE=/pipconfig.txt ${baseInstall}` : baseInstall;

  const deps = await assembleLocalDeps(projectDir, config);
  const document = cloneOrdered(config.document) as OrderedObject;
  await rewriteImportPaths(document, projectDir, config, deps);

  const pypiPackages = config.dependencies.filter((dependency) => !dependency.startsWith('.'));
  const outside = new Set(deps.outsideDirs);
  const additionalContexts = registerContexts(deps);
  const buildsJs = (isTruthy(document.get('ui')) || Boolean(config.nodeVersion)) && deps.workingDir !== null;

  const installs = [
    buildsJs ? 'RUN /storage/install-node.sh' : '',
    config.pipConfigFile ? `ADD ${config.pipConfigFile} /pipconfig.txt` : '',
    pypiPackages.length > 0 ? `RUN ${pipInstall} ${pypiPackages.join(' ')}` : '',
    requirementsBlock(deps, outside, projectDir, pipInstall),
    [...deps.realPackages].map(([dir, { written, destination }]) => realPackageBlock(written, destination, outside.has(dir))).join('\n'),
    [...deps.fauxPackages].map(([dir, { written, destination }]) => fauxPackageBlock(dir, written, destination, outside.has(dir))).join('\n\n'),
  ].filter((step) => step !== '');

  const jsBuild = buildsJs
    ? [
        '# -- Installing JS dependencies --',
        `ENV NODE_VERSION=${config.nodeVersion || '20'}`,
        `WORKDIR ${deps.workingDir}`,
        `RUN ${(await detectNodeInstall(projectDir)).command} && tsx /api/langgraph_api/js/build.mts`,
        '# -- End of JS dependencies install --',
      ].join('\n')
    : '';

  const lines = [
    ...(additionalContexts.size > 0 ? ['# syntax=docker/dockerfile:1.4', ''] : []),
    `FROM ${input.image}`,
    '',
    config.dockerfileLines.join('\n'),
    '',
    installs.join('\n\n'),
    '',
    '# -- Installing all local dependencies --',
    editableInstallStep(pipInstall),
    '# -- End of local dependencies install --',
    input.runtimeEnvLines(document).join('\n'),
    '',
    jsBuild,
    '',
    cleanupSteps(installCommand, buildToolsToRemove(config), installer),
    '',
    deps.workingDir !== null ? `WORKDIR ${deps.workingDir}` : '',
  ];
  return { dockerfile: lines.join('\n'), additionalContexts };
}

/** `auto` means uv, unless the base image's tag names a langgraph-api older than 0.2.47. */
function resolveInstaller(config: LangGraphConfig, baseImage: string): 'uv' | 'pip' {
  if (config.pipInstaller !== 'auto') return config.pipInstaller;
  if (baseImage === 'langchain/langgraph-trial') return 'pip';
  const version = /:(\d+(?:\.\d+)?(?:\.\d+)?)(?:-|$)/.exec(baseImage)?.[1];
  if (version === undefined) return 'uv';
  const [major = 0, minor = 0, patch = 0] = version.split('.').map(Number);
  return compareVersions([major, minor, patch], [0, 2, 47]) >= 0 ? 'uv' : 'pip';
}

/** Python tuple comparison: a shorter tuple that is a prefix is smaller. */
function compareVersions(a: number[], b: number[]): number {
  for (let index = 0; index < Math.min(a.length, b.length); index++) {
    const difference = (a[index] ?? 0) - (b[index] ?? 0);
    if (difference !== 0) return difference;
  }
  return a.length - b.length;
}

/** Python truthiness of a JSON value: null, false, 0, "", [] and {} are false. */
function isTruthy(value: OrderedJson | undefined): boolean {
  if (value === undefined || value === null || value === false || value === '') return false;
  if (Array.isArray(value)) return value.length > 0;
  if (value instanceof Map) return value.size > 0;
  if (typeof value === 'object') return value.value !== 0;
  return true;
}

function requirementsBlock(deps: LocalDeps, outside: ReadonlySet<string>, projectDir: string, pipInstall: string): string {
  if (deps.requirements.length === 0) return '';
  const copies = deps.requirements.map(({ file, destination }) =>
    // The CLI names the context after the file here (`outer-requirements.txt`); kept as it is.
    outside.has(path.dirname(file))
      ? `COPY --from=outer-${path.basename(file)} requirements.txt ${destination}`
      : `ADD ${path.relative(projectDir, file)} ${destination}`,
  );
  const install = `RUN ${pipInstall} ${deps.requirements.map(({ destination }) => `-r ${destination}`).join(' ')}`;
  return ['# -- Installing local requirements --', ...copies, install, '# -- End of local requirements install --'].join('\n');
}

function realPackageBlock(written: string, folder: string, isOutside: boolean): string {
  const add = isOutside ? `COPY --from=${folder} . /deps/${folder}` : `ADD ${written} /deps/${folder}`;
  return [`# -- Adding local package ${written} --`, add, `# -- End of local package ${written} --`].join('\n');
}

/** A directory without packaging metadata gets a generated pyproject.toml so pip can install it. */
function fauxPackageBlock(dir: string, written: string, destination: string, isOutside: boolean): string {
  const name = path.basename(dir);
  const add = isOutside ? `COPY --from=outer-${name} . ${destination}` : `ADD ${written} ${destination}`;
  return [
    `# -- Adding non-package dependency ${name} --`,
    add,
    'RUN set -ex && \\',
    "    for line in '[project]' \\",
    `                'name = "${name}"' \\`,
    `                'version = "0.1"' \\`,
    `                '[tool.setuptools.package-data]' \\`,
    `                '"*" = ["**/*"]' \\`,
    `                '[build-system]' \\`,
    `                'requires = ["setuptools>=61"]' \\`,
    `                'build-backend = "setuptools.build_meta"'; do \\`,
    `        echo "$line" >> ${shellQuote(`/deps/outer-${name}/pyproject.toml`)}; \\`,
    '    done',
    `# -- End of non-package dependency ${name} --`,
  ].join('\n');
}

/** Context names for `--build-context`, unique, in the order the dependencies were listed. */
function registerContexts(deps: LocalDeps): Map<string, string> {
  const contexts = new Map<string, string>();
  const registered = new Set<string>();
  for (const dir of deps.outsideDirs) {
    if (registered.has(dir)) continue;
    registered.add(dir);
    const real = deps.realPackages.get(dir);
    const preferred = real !== undefined ? real.destination : `outer-${path.basename(dir)}`;
    let name = preferred;
    for (let suffix = 1; contexts.has(name); suffix++) name = `${preferred}_${suffix}`;
    contexts.set(name, dir);
  }
  return contexts;
}

/** One RUN over every /deps folder; the spacing is the CLI's (a continued Python string). */
function editableInstallStep(pipInstall: string): string {
  return [
    'RUN for dep in /deps/*; do ',
    '            echo "Installing $dep"; ',
    '            if [ -d "$dep" ]; then ',
    '                echo "Installing $dep"; ',
    `                (cd "$dep" && ${pipInstall} -e .); `,
    '            fi; ',
    '        done',
  ].join('');
}

function buildToolsToRemove(config: LangGraphConfig): readonly BuildTool[] {
  const keep = config.keepPkgTools;
  if (keep === true) return [];
  if (!Array.isArray(keep) || keep.length === 0) return BUILD_TOOLS;
  return BUILD_TOOLS.filter((tool) => !keep.includes(tool));
}

/** Reinstalls the server package over anything user dependencies replaced, then drops build tools. */
function cleanupSteps(installCommand: string, remove: readonly BuildTool[], installer: 'uv' | 'pip'): string {
  const steps = [
    [
      "# -- Ensure user deps didn't inadvertently overwrite langgraph-api",
      'RUN mkdir -p /api/langgraph_api /api/langgraph_runtime /api/langgraph_license && ' +
        'touch /api/langgraph_api/__init__.py /api/langgraph_runtime/__init__.py /api/langgraph_license/__init__.py',
      `RUN PYTHONDONTWRITEBYTECODE=1 ${installCommand} --no-cache-dir --no-deps -e /api`,
      "# -- End of ensuring user deps didn't inadvertently overwrite langgraph-api --",
      '# -- Removing build deps from the final image ~<:===~~~ --',
    ].join('\n'),
  ];
  if (remove.length > 0) {
    const names = [...remove].sort().join(' ');
    steps.push(`RUN pip uninstall -y ${names}`);
    const pipBinaries = remove.includes('pip');
    const local = remove.map((tool) => `/usr/local/lib/python*/site-packages/${tool}*`).join(' ');
    steps.push(`RUN rm -rf ${local}${pipBinaries ? ' && find /usr/local/bin -name "pip*" -delete || true' : ''}`);
    const wolfi = remove.map((tool) => `/usr/lib/python*/site-packages/${tool}*`).join(' ');
    steps.push(`RUN rm -rf ${wolfi}${pipBinaries ? ' && find /usr/bin -name "pip*" -delete || true' : ''}`);
    if (installer === 'uv') steps.push(`RUN uv pip uninstall --system ${names} && rm /usr/bin/uv /usr/bin/uvx`);
  } else if (installer === 'uv') {
    steps.push('RUN rm /usr/bin/uv /usr/bin/uvx\n# -- End of build deps removal --');
  }
  return steps.join('\n');
}
