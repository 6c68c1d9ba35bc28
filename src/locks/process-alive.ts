/**
 * Whether a process with this id runs on this machine (signal 0 checks without signalling; a
 * process of another user answers EPERM and is alive). Ids are reused: a holder recorded
 * before a reboot may name another program, which callers that care check for themselves.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
