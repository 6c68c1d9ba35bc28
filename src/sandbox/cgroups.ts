import { access, mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** Where a build's limits come from: cgroup v1 (one hierarchy per controller) or v2 (unified). */
export type CgroupLayout = { version: 1; root: string } | { version: 2; root: string };

export interface BuildLimits {
  memoryBytes: number;
  cpus: number;
  pids: number;
}

/** Berth's subtree in each hierarchy; one child per running build. */
const PARENT = 'berth-build';
const V1_CONTROLLERS = ['memory', 'pids', 'cpu', 'freezer'] as const;
const CPU_PERIOD_US = 100_000;
const KILL_WAIT_MS = 10_000;

/** Which cgroup version the host runs, or why builds cannot be bounded here. */
export async function detectCgroups(root = '/sys/fs/cgroup'): Promise<CgroupLayout | string> {
  if (await exists(path.join(root, 'cgroup.controllers'))) {
    const controllers = (await readFile(path.join(root, 'cgroup.controllers'), 'utf8')).split(/\s+/);
    const missing = ['memory', 'pids', 'cpu'].filter((name) => !controllers.includes(name));
    if (missing.length > 0) return `the cgroup v2 hierarchy at ${root} lacks the ${missing.join(', ')} controller(s)`;
    return { version: 2, root };
  }
  const missing: string[] = [];
  for (const controller of V1_CONTROLLERS) if (!(await exists(path.join(root, controller, 'cgroup.procs')))) missing.push(controller);
  if (missing.length > 0) return `no cgroup v1 hierarchy for ${missing.join(', ')} under ${root}`;
  return { version: 1, root };
}

/**
 * The control group one build runs in: its processes (buildah, slirp4netns, every step's
 * processes) share its memory, CPU and process limits, and when the build ends all of them
 * are killed, whatever they did to detach (a new session, a double fork, a PID namespace).
 */
export class BuildCgroup {
  private constructor(
    private readonly layout: CgroupLayout,
    private readonly dirs: readonly string[],
  ) {}

  static async create(layout: CgroupLayout, name: string, limits: BuildLimits): Promise<BuildCgroup> {
    if (!/^[A-Za-z0-9._-]+$/.test(name)) throw new Error(`invalid cgroup name ${name}`);
    if (layout.version === 2) {
      const parent = path.join(layout.root, PARENT);
      await mkdir(parent, { recursive: true });
      // Controllers must be enabled on the way down before a child can use them.
      await writeFile(path.join(layout.root, 'cgroup.subtree_control'), '+memory +pids +cpu').catch(() => {});
      await writeFile(path.join(parent, 'cgroup.subtree_control'), '+memory +pids +cpu');
      const dir = path.join(parent, name);
      await mkdir(dir, { recursive: true });
      const cgroup = new BuildCgroup(layout, [dir]);
      await writeFile(path.join(dir, 'memory.max'), String(limits.memoryBytes));
      await writeFile(path.join(dir, 'memory.swap.max'), '0').catch(() => {});
      await writeFile(path.join(dir, 'pids.max'), String(limits.pids));
      await writeFile(path.join(dir, 'cpu.max'), `${cpuQuota(limits.cpus)} ${CPU_PERIOD_US}`);
      return cgroup;
    }
    const dirs = V1_CONTROLLERS.map((controller) => path.join(layout.root, controller, PARENT, name));
    for (const dir of dirs) await mkdir(dir, { recursive: true });
    const cgroup = new BuildCgroup(layout, dirs);
    const [memory, pids, cpu] = dirs as [string, string, string, string];
    await writeFile(path.join(memory, 'memory.limit_in_bytes'), String(limits.memoryBytes));
    // Memory and swap together, where the kernel accounts swap: no escaping the limit into swap.
    await writeFile(path.join(memory, 'memory.memsw.limit_in_bytes'), String(limits.memoryBytes)).catch(() => {});
    await writeFile(path.join(pids, 'pids.max'), String(limits.pids));
    await writeFile(path.join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
    await writeFile(path.join(cpu, 'cpu.cfs_quota_us'), String(cpuQuota(limits.cpus)));
    return cgroup;
  }

  /** The files a process writes its pid into to join this group (before it runs anything else). */
  get procsFiles(): string[] {
    return this.dirs.map((dir) => path.join(dir, 'cgroup.procs'));
  }

  /** Whether the kernel killed a process of the build for passing the memory limit. */
  async outOfMemory(): Promise<boolean> {
    const file = this.layout.version === 2 ? path.join(this.dirs[0] ?? '', 'memory.events') : path.join(this.dirs[0] ?? '', 'memory.oom_control');
    const text = await readFile(file, 'utf8').catch(() => '');
    return Number(/oom_kill (\d+)/.exec(text)?.[1] ?? 0) > 0;
  }

  /** Whether the build ever hit its process limit. */
  async hitProcessLimit(): Promise<boolean> {
    const dir = this.layout.version === 2 ? (this.dirs[0] ?? '') : (this.dirs[1] ?? '');
    const text = await readFile(path.join(dir, 'pids.events'), 'utf8').catch(() => '');
    return Number(/max (\d+)/.exec(text)?.[1] ?? 0) > 0;
  }

  /** Kills every process left in the group and removes it. Safe to call more than once. */
  async destroy(): Promise<void> {
    await this.killAll();
    for (const dir of this.dirs) await rmdir(dir).catch(() => {});
  }

  private async killAll(): Promise<void> {
    const deadline = Date.now() + KILL_WAIT_MS;
    if (this.layout.version === 2 && (await exists(path.join(this.dirs[0] ?? '', 'cgroup.kill')))) {
      await writeFile(path.join(this.dirs[0] ?? '', 'cgroup.kill'), '1').catch(() => {});
    }
    while ((await this.members()).length > 0 && Date.now() < deadline) {
      // Frozen, no member can fork between the listing and the kill.
      await this.freeze(true);
      for (const pid of await this.members()) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await this.freeze(false);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  private async members(): Promise<number[]> {
    const pids = new Set<number>();
    for (const file of this.procsFiles) {
      const text = await readFile(file, 'utf8').catch(() => '');
      for (const line of text.split('\n')) if (/^\d+$/.test(line)) pids.add(Number(line));
    }
    return [...pids];
  }

  private async freeze(frozen: boolean): Promise<void> {
    const [file, value] =
      this.layout.version === 2
        ? [path.join(this.dirs[0] ?? '', 'cgroup.freeze'), frozen ? '1' : '0']
        : [path.join(this.dirs[3] ?? '', 'freezer.state'), frozen ? 'FROZEN' : 'THAWED'];
    await writeFile(file, value).catch(() => {});
  }
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/** The quota of a CPU count in microseconds per period: whole, and at least the kernel's 1 ms (a job may ask for a fraction of a core). */
function cpuQuota(cpus: number): number {
  return Math.max(1000, Math.round(cpus * CPU_PERIOD_US));
}
