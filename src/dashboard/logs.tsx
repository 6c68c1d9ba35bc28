import { useRoute } from 'preact-iso';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { LOG_LEVELS, levelsAtOrAbove } from '../domain/log-levels.js';
import { AnsiText, plainText } from './ansi.js';
import { useWorkplace } from './context.js';
import { type LogEvent, useDeploymentEvents } from './events.js';
import { shortId } from './format.js';

/** Lines a revision's log screen keeps: more than the timeline's failure summary needs. */
const LINES_KEPT = 20_000;

/** A revision's build and deploy logs, following live: level filter, search, download. */
export function LogsPage() {
  const { client, link, signedOut } = useWorkplace();
  const { params } = useRoute();
  const deploymentId = params.deploymentId!;
  const revisionId = params.revisionId!;
  const events = useDeploymentEvents(client, deploymentId, () => {}, signedOut, LINES_KEPT);
  const [level, setLevel] = useState('');
  const [search, setSearch] = useState('');
  const [follow, setFollow] = useState(true);
  const bottom = useRef<HTMLDivElement>(null);

  const lines = useMemo(() => {
    const levels = level ? new Set<string>(levelsAtOrAbove(level)) : undefined;
    const needle = search.trim().toLowerCase();
    return events.logs.filter(
      (line: LogEvent) =>
        line.data.revision_id === revisionId &&
        (!levels || levels.has(line.data.level.toUpperCase())) &&
        (!needle || plainText(line.data.message).toLowerCase().includes(needle)),
    );
  }, [events.logs, revisionId, level, search]);
  useEffect(() => {
    if (follow) bottom.current?.scrollIntoView({ block: 'end' });
  }, [lines, follow]);

  function download() {
    const text = lines.map((line) => `${new Date(line.data.timestamp).toISOString()} ${line.data.level} ${plainText(line.data.message)}`).join('\n');
    const url = URL.createObjectURL(new Blob([`${text}\n`], { type: 'text/plain' }));
    const anchor = document.createElement('a');
    anchor.href = url;
    anchor.download = `revision-${revisionId}.log`;
    anchor.click();
    URL.revokeObjectURL(url);
  }

  return (
    <section>
      <p class="crumbs">
        <a href={link('/deployments')}>Deployments</a> /{' '}
        <a href={link(`/deployments/${deploymentId}/revisions/${revisionId}`)}>revision {shortId(revisionId)}</a> /
      </p>
      <h1>
        Logs <span class={`connection connection-${events.connection}`}>{events.connection}</span>
      </h1>
      <div class="filters">
        <label>
          Level{' '}
          <select value={level} onChange={(event) => setLevel(event.currentTarget.value)}>
            <option value="">all</option>
            {LOG_LEVELS.map((value) => (
              <option key={value} value={value}>
                {value.toLowerCase()} and above
              </option>
            ))}
          </select>
        </label>
        <label>
          Search <input type="search" value={search} onInput={(event) => setSearch(event.currentTarget.value)} />
        </label>
        <label>
          <input type="checkbox" checked={follow} onChange={(event) => setFollow(event.currentTarget.checked)} /> Follow
        </label>
        <button type="button" onClick={download} disabled={lines.length === 0}>
          Download
        </button>
      </div>
      {events.error && (
        <p role="alert" class="error">
          {events.error}
        </p>
      )}
      <pre class="log" data-testid="log" aria-live="off">
        {lines.map((line) => (
          <div key={line.id} class={`line level-${line.data.level.toLowerCase()}`}>
            <AnsiText text={line.data.message} />
          </div>
        ))}
      </pre>
      <div ref={bottom} />
      {lines.length === 0 && <p class="loading">{events.logs.length === 0 ? 'No log line yet.' : 'No line matches.'}</p>}
    </section>
  );
}
