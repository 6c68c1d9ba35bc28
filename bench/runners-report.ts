/** The runners scenario's result (bench/runners.ts) and its section of bench/results.md, with the targets of issue 25. */
import path from 'node:path';

export interface RunnersRound {
  processes: number;
  /** Milliseconds from the PATCH's answer (the revision queued) to a waiting runner's claim answering with its job. */
  pickup: {
    count: number;
    p50: number;
    p99: number;
    max: number;
    fromSentP99: number;
    /** The part of it before the engine moved the revision to BUILDING (its timeline), the rest being the job's queueing and the claim's wake-up. */
    toBuildingP50: number;
    toBuildingP99: number;
    /** The slowest pick-ups, each with the time the server's and the runners' main threads spent waiting for a CPU from the PATCH to the claim seen. */
    slowest: { ms: number; runQueueMs: number }[];
    /** The server's event-loop delay (max) and longest GC pause over the paced builds, from its /metrics. */
    loopMaxMs?: number;
    gcMaxMs?: number;
  };
  burst: { builds: number; seconds: number; buildsPerMinute: number; serverCpuMsPerBuild: number; statuses: Record<string, number> };
  runnerErrors: number;
}

export interface RunnersResult {
  idle: { runners: number; seconds: number; serverCpu: number; claims: number; errors: number };
  setupSeconds: number;
  rounds: RunnersRound[];
  /** The machine's 1-minute load average before and after the scenario (others share it). */
  load?: { before: number; after: number };
  profile?: string;
}

const ms = (value: number) => (value < 10 ? value.toFixed(2) : value.toFixed(1));
const opt = (value: number | undefined) => (value === undefined ? '–' : ms(value));

export function runnersReport(r: RunnersResult, root: string): string[] {
  const target = (met: boolean, text: string) => `- **${met ? 'met' : 'not met'}**: ${text}`;
  const worstPickup = Math.max(...r.rounds.map((round) => round.pickup.p99));
  const worstCpu = Math.max(...r.rounds.map((round) => round.burst.serverCpuMsPerBuild));
  return [
    'Build runners (bench/runners.ts), BERTH_BUILDER=runners, default rate limit and engine concurrency (4), BERTH_ENGINE_WORKSPACE_SLOTS=8 ' +
      '(every build is one workspace’s, and a workspace’s builds on runners count in its share, 3 by default; a build on a runner lends its engine slot while the runner builds). ' +
      'The runners are bench runner processes (bench/runner-client.ts), not `berth builder`: the real protocol over HTTP with the runner’s own client ' +
      '(claim with wait=30, source, download of the uploaded archive, two log batches of 20 lines with a heartbeat between them, the image reported), ' +
      'and a build that costs nothing, so the figures are the protocol’s and the control plane’s, not buildah’s. Each build is an `internal_source` revision ' +
      '(a PATCH naming the uploaded archive) of its own deployment, placed on a listener with no agent, so it stops at AWAITING_DEPLOY and no deploy is measured. ' +
      'Pick-up: one revision at a time with every runner waiting in its claim, from the PATCH’s answer to the claim answering with the job. ' +
      'Burst: the builds PATCHed together; builds/min from the first PATCH to the last result reported; server CPU from the first PATCH until every revision ' +
      'left BUILDING (the PATCHes, the engine’s work, the runner routes and one GET of each revision to see it), divided by the builds. ' +
      '"To BUILDING" is the timeline’s BUILDING event less the PATCH’s answer: negative when the engine, woken in the same process, ' +
      'had the revision building before the answer left, so pick-up is the job’s queueing and the waiting claim’s wake-up.' +
      (r.load ? ` Load average (1 min) ${r.load.before.toFixed(1)} before and ${r.load.after.toFixed(1)} after, on a machine shared with other work.` : ''),
    '',
    '| runner processes | pick-up p50 ms | p99 ms | max ms | p99 from the PATCH sent | of which to BUILDING p50 / p99 | slowest 3 (waiting for a CPU) | loop max / longest GC ms | builds in the burst | builds/min | server CPU per build | runner errors |',
    '|---:|---:|---:|---:|---:|---:|---|---|---:|---:|---:|---:|',
    ...r.rounds.map(
      (round) =>
        `| ${round.processes} | ${ms(round.pickup.p50)} | ${ms(round.pickup.p99)} | ${ms(round.pickup.max)} | ${ms(round.pickup.fromSentP99)} | ` +
        `${ms(round.pickup.toBuildingP50)} / ${ms(round.pickup.toBuildingP99)} | ` +
        `${round.pickup.slowest.map((p) => `${ms(p.ms)} (${ms(p.runQueueMs)})`).join(', ')} | ` +
        `${opt(round.pickup.loopMaxMs)} / ${opt(round.pickup.gcMaxMs)} | ` +
        `${round.burst.builds} | ${round.burst.buildsPerMinute.toFixed(0)} | ${round.burst.serverCpuMsPerBuild.toFixed(1)} ms | ${round.runnerErrors} |`,
    ),
    '',
    `Idle: ${r.idle.runners} runners, each with a runner key of its own, long-polling the claim route with nothing queued: ` +
      `server CPU **${(r.idle.serverCpu * 100).toFixed(1)} % of a core** over ${r.idle.seconds.toFixed(0)} s (${r.idle.claims} claims answered empty meanwhile, ${r.idle.errors} failed).`,
    '',
    'Targets (issue 25):',
    '',
    target(worstPickup < 100, `job pick-up p99 under 100 ms after the revision is queued: worst p99 ${ms(worstPickup)} ms over the runner counts`),
    target(worstCpu < 50, `control-plane CPU per build under 50 ms: at most ${worstCpu.toFixed(1)} ms`),
    ...(r.profile ? [`- CPU profile: ${path.relative(root, r.profile)}`] : []),
    '',
  ];
}
