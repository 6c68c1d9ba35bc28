import type { Logger } from 'pino';
import type { PushBuildService } from './push-builds.js';

/**
 * Asks `git` integrations' remotes for new commits every `seconds` (BERTH_GIT_POLL_SECONDS)
 * and starts builds of deployments that build on push. One poll at a time; a poll still
 * running when the next is due makes that one wait for the following tick.
 */
export function startGitPoller(pushBuilds: PushBuildService, seconds: number, logger: Logger): { stop(): Promise<void> } {
  const stopped = new AbortController();
  let running: Promise<void> | undefined;
  const poll = () => {
    if (running || stopped.signal.aborted) return;
    running = pushBuilds
      .pollGitIntegrations(logger, stopped.signal)
      .then((built) => {
        if (built > 0) logger.info({ revisions: built }, 'new commits seen: started builds on push');
      })
      .catch((error: unknown) => logger.warn({ err: error }, 'polling git integrations failed'))
      .finally(() => {
        running = undefined;
      });
  };
  const timer = setInterval(poll, seconds * 1000);
  timer.unref();
  poll();
  return {
    async stop() {
      stopped.abort();
      clearInterval(timer);
      await running;
    },
  };
}
