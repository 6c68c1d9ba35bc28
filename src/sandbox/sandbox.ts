import { mkdtemp, stat } from 'node:fs/promises';
import path from 'node:path';
import { lastOutputLine, runTool } from '../containers/commands.js';
import type { ResolvedBuilder } from '../image-builds/types.js';
import type { BuildSandboxSettings } from '../config.js';
import { BERTH_CONTAINERS_CONF, BERTH_REGISTRIES_CONF, findOnPath } from '../containers/tools.js';
import { BuildCgroup, type CgroupLayout, detectCgroups } from './cgroups.js';
import { findBuildUser, type BuildUser } from './build-user.js';
import { applyFirewall, firewallRules, loopbackResolvers } from './firewall.js';
import { ensureDir, SYSTEM_PATH } from './host.js';
import { WorkspaceDisks } from './workspace-disks.js';

const TOOLS = ['buildah', 'skopeo', 'setpriv', 'nft', 'newuidmap', 'newgidmap', 'slirp4netns', 'chown', 'rm'] as const;
type Tool = (typeof TOOLS)[number];
const MB = 1024 * 1024;

/** A directory a build works in: its context and Dockerfile go in, the build user owns it once handed over. */
export interface BuildWorkDir {
  /** Root-owned until `handOver`; the build user's afterwards. */
  path: string;
}

/**
 * Confines builds on this host (docs/security.md, "Builds"): every build runs as an
 * unprivileged build user in a user namespace of its own (rootless buildah), each step in a
 * runc container with its own PID, mount, IPC, UTS and network namespaces (slirp4netns),
 * inside a control group that bounds its memory, CPU and processes and takes everything it
 * started with it when it ends. A firewall keyed on the build user keeps it off this host's
 * addresses. Each workspace has an image store, layer cache and package cache of its own;
 * the configured base images come from a shared read-only store; a finished image is copied
 * into the host's store, which runs it, and only then is it visible to anything else.
 *
 * Berth must run as root to set this up: it creates the control groups, loads the firewall
 * and drops to the build user. Nothing a build does runs as root.
 */
export class BuildSandbox {
  private constructor(
    readonly settings: BuildSandboxSettings,
    readonly user: BuildUser,
    private readonly tools: Record<Tool, string>,
    private readonly cgroups: CgroupLayout,
    private readonly disks: WorkspaceDisks,
  ) {}

  /** Checks the host and sets the sandbox up, or says what is missing (the build then fails with that). */
  static async prepare(settings: BuildSandboxSettings): Promise<BuildSandbox | string> {
    const prefix = 'Builds run in a sandbox (BERTH_BUILD_SANDBOX=on) that this host cannot provide';
    if (process.getuid?.() !== 0) {
      return `${prefix}: Berth must run as root to confine builds to an unprivileged user. Start Berth as root after running scripts/setup-containers.sh, or, on a machine whose only user is you, set BERTH_BUILD_SANDBOX=off.`;
    }
    const user = await findBuildUser(settings.user);
    if (typeof user === 'string') return `${prefix}: ${user}.`;
    const tools = {} as Record<Tool, string>;
    const missing: string[] = [];
    for (const tool of TOOLS) {
      const found = await findOnPath(tool, `${process.env.PATH ?? ''}:${SYSTEM_PATH}`);
      if (found) tools[tool] = found;
      else missing.push(tool);
    }
    if (missing.length > 0) return `${prefix}: ${missing.join(', ')} not found; run scripts/setup-containers.sh as root.`;
    const tun = await stat('/dev/net/tun').catch(() => null);
    if (!tun || (tun.mode & 0o006) !== 0o006) {
      return `${prefix}: /dev/net/tun must be readable and writable by every user (mode 0666, as udev makes it) for slirp4netns; run scripts/setup-containers.sh as root.`;
    }
    const cgroups = await detectCgroups();
    if (typeof cgroups === 'string') return `${prefix}: ${cgroups}.`;
    const firewall = await applyFirewall(
      tools.nft,
      firewallRules(user.uid, { loopbackResolvers: await loopbackResolvers(), denyNetworks: settings.denyNetworks }),
    );
    if (firewall) return `${prefix}: ${firewall}.`;

    // Root owns the top and the places only Berth writes into; the build user can pass through.
    await ensureDir(settings.dir, 0o711);
    await ensureDir(path.join(settings.dir, 'contexts'), 0o711);
    await ensureDir(path.join(settings.dir, 'workspaces'), 0o711);
    await ensureDir(path.join(settings.dir, 'exports'), 0o711);
    await ensureDir(path.join(settings.dir, 'home'), 0o700, user);
    await ensureDir(path.join(settings.dir, 'home', 'run'), 0o700, user);
    await ensureDir(path.join(settings.dir, 'bases'), 0o711);
    for (const sub of ['storage', 'run', 'layout']) await ensureDir(path.join(settings.dir, 'bases', sub), 0o700, user);
    const disks = new WorkspaceDisks({ dir: settings.dir, sizeMb: settings.diskMb, user });
    return new BuildSandbox(settings, user, tools, cgroups, disks);
  }

  /** buildah as the build user over the workspace's own image store (its layer cache), with the base images readable beside it. */
  async builderFor(workspaceId: string): Promise<ResolvedBuilder> {
    const dir = await this.workspaceDir(workspaceId);
    return {
      kind: 'buildah',
      binary: this.tools.buildah,
      env: this.env(path.join(dir, 'tmp')),
      runAs: { uid: this.user.uid, gid: this.user.gid },
      globalArgs: this.storageArgs(dir),
    };
  }

  /** buildah as the build user over the bases store, which only Berth writes into. */
  get basesBuilder(): ResolvedBuilder {
    const dir = path.join(this.settings.dir, 'bases');
    return {
      kind: 'buildah',
      binary: this.tools.buildah,
      env: this.env(path.join(this.settings.dir, 'home', 'run')),
      runAs: { uid: this.user.uid, gid: this.user.gid },
      globalArgs: ['--storage-driver', 'overlay', '--root', path.join(dir, 'storage'), '--runroot', path.join(dir, 'run')],
    };
  }

  /** The workspace's directory for `RUN --mount=type=cache` contents (npm's cache): shared by its builds only. */
  async cacheDirFor(workspaceId: string): Promise<string> {
    const dir = path.join(await this.workspaceDir(workspaceId), 'cache');
    await ensureDir(dir, 0o700, this.user);
    return dir;
  }

  /**
   * The flags of `buildah bud` that put each step in its own namespaces, the network through
   * slirp4netns. Images already in the store (the bases, the workspace's own) are used as they
   * are: asking a registry whether a newer one exists would ask `localhost` for Berth's own
   * base images, which the firewall answers with silence.
   */
  get buildFlags(): string[] {
    return ['--isolation', 'rootless', '--network', 'private', '--pid', 'private', '--ipc', 'private', '--uts', 'private', '--pull=false'];
  }

  /** A fresh directory for one build's context, owned by root (and so not yet changeable by the build user). */
  async newWorkDir(label: string): Promise<BuildWorkDir> {
    return { path: await mkdtemp(path.join(this.settings.dir, 'contexts', `${label}-`)) };
  }

  /** Gives the work directory to the build user, without following the links its contents hold. */
  async handOver(work: BuildWorkDir): Promise<void> {
    const result = await runTool({ binary: this.tools.chown, env: { PATH: SYSTEM_PATH } }, [
      '-R',
      '--no-dereference',
      `${this.user.uid}:${this.user.gid}`,
      work.path,
    ]);
    if (result.code !== 0) throw new Error(`could not hand the build directory to the build user: ${lastOutputLine(result)}`);
  }

  /**
   * Removes a work directory as the build user: once handed over, anything in it may have
   * been replaced by that user, and root must not follow what it put there.
   */
  async removeWorkDir(work: BuildWorkDir): Promise<void> {
    const owner = await stat(work.path).catch(() => null);
    if (!owner) return;
    const asUser = owner.uid === this.user.uid ? { runAs: { uid: this.user.uid, gid: this.user.gid } } : {};
    await runTool({ binary: this.tools.rm, env: { PATH: SYSTEM_PATH }, ...asUser }, ['-rf', '--one-file-system', '--', work.path]);
    // The directory itself sits in root's contexts/ directory, which the build user cannot change.
    await runTool({ binary: this.tools.rm, env: { PATH: SYSTEM_PATH } }, ['-rf', '--one-file-system', '--', work.path]);
  }

  /** A control group with this build's limits (the sandbox's, or tighter ones given); the build joins it before it starts. */
  async cgroupFor(buildName: string, limits: { memoryMb: number; cpus: number } = this.settings): Promise<BuildCgroup> {
    const { memoryMb, cpus } = limits;
    const { pids } = this.settings;
    return BuildCgroup.create(this.cgroups, buildName, { memoryBytes: memoryMb * MB, cpus, pids });
  }

  /** skopeo as root or as the build user, with the sandbox's environment. */
  skopeo(asBuildUser: boolean, scratch: string): ResolvedBuilder {
    return {
      kind: 'buildah',
      binary: this.tools.skopeo,
      env: this.env(scratch),
      ...(asBuildUser ? { runAs: { uid: this.user.uid, gid: this.user.gid } } : {}),
    };
  }

  /** The storage flags of buildah for one store, with the base images' store read-only beside it. */
  storageArgs(storeDir: string): string[] {
    return [
      '--storage-driver',
      'overlay',
      '--root',
      path.join(storeDir, 'storage'),
      '--runroot',
      path.join(storeDir, 'run'),
      '--storage-opt',
      `overlay.imagestore=${this.basesStore}`,
    ];
  }

  /** The `containers-storage:` transport prefix of a workspace's store, for skopeo. */
  async storeReference(workspaceId: string): Promise<string> {
    const dir = await this.workspaceDir(workspaceId);
    return `containers-storage:[overlay@${path.join(dir, 'storage')}+${path.join(dir, 'run')}:overlay.imagestore=${this.basesStore}]`;
  }

  /** The base images' store: written by Berth only, with the configured base images only. */
  get basesStore(): string {
    return path.join(this.settings.dir, 'bases', 'storage');
  }

  get basesReference(): string {
    const dir = path.join(this.settings.dir, 'bases');
    return `containers-storage:[overlay@${path.join(dir, 'storage')}+${path.join(dir, 'run')}]`;
  }

  /** The workspace's directory (its own file system of BERTH_BUILD_DISK_MB when bounded), the build user's. */
  async workspaceDir(workspaceId: string): Promise<string> {
    const dir = await this.disks.ensure(workspaceId);
    for (const sub of ['storage', 'run', 'tmp']) await ensureDir(path.join(dir, sub), 0o700, this.user);
    return dir;
  }

  /**
   * The OCI layout a workspace's images leave the sandbox through (one reference per
   * deployment). It lives beside the workspaces' file systems, not in one, so that the base
   * images' layers can be linked into it instead of copied.
   */
  async exportDir(workspaceId: string): Promise<string> {
    const dir = path.join(this.settings.dir, 'exports', workspaceId);
    await ensureDir(dir, 0o700, this.user);
    return dir;
  }

  /** The base images as an OCI layout (the build user's; its blobs are linked into exports). */
  get basesLayout(): string {
    return path.join(this.settings.dir, 'bases', 'layout');
  }

  /** A minimal environment: nothing of Berth's own (keys, database URLs) reaches the build user. */
  private env(tmp: string): NodeJS.ProcessEnv {
    return {
      PATH: SYSTEM_PATH,
      HOME: path.join(this.settings.dir, 'home'),
      XDG_RUNTIME_DIR: path.join(this.settings.dir, 'home', 'run'),
      TMPDIR: tmp,
      LANG: 'C.UTF-8',
      CONTAINERS_CONF: process.env.CONTAINERS_CONF ?? BERTH_CONTAINERS_CONF,
      CONTAINERS_REGISTRIES_CONF: process.env.CONTAINERS_REGISTRIES_CONF ?? BERTH_REGISTRIES_CONF,
    };
  }
}
