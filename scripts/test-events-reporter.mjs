// A node:test reporter for scripts/run-tests.ts: one JSON line per event the runner needs
// (tests starting and ending, failures and why, the closing counts), beside the
// human-readable spec output. Lines are written as they happen, so a file killed at its
// limit still shows what ran.
export default async function* eventsReporter(source) {
  for await (const event of source) {
    const { type, data } = event;
    // dequeue and complete come in the order tests run (start, pass and fail in the order
    // they are reported, which holds back a test that never ends).
    if (type === 'test:dequeue') yield `${JSON.stringify({ event: 'start', name: data.name, nesting: data.nesting })}\n`;
    else if (type === 'test:complete') yield `${JSON.stringify({ event: 'end', name: data.name, nesting: data.nesting })}\n`;
    else if (type === 'test:fail')
      yield `${JSON.stringify({ event: 'fail', name: data.name, nesting: data.nesting, message: whyFailed(data.details?.error) })}\n`;
    else if (type === 'test:diagnostic' && data.nesting === 0) yield `${JSON.stringify({ event: 'diagnostic', message: data.message })}\n`;
  }
}

/**
 * What went wrong, with the stack of what was thrown (node wraps it as the cause of its own
 * ERR_TEST_FAILURE): CI shows the end of the run's output, where the runner repeats it.
 */
function whyFailed(error) {
  if (!error) return '';
  const thrown = error.code === 'ERR_TEST_FAILURE' && error.cause !== undefined ? error.cause : error;
  const kind = error.failureType ? `${error.failureType}: ` : '';
  const text = thrown instanceof Error ? (thrown.stack ?? `${thrown.name}: ${thrown.message}`) : String(thrown);
  return `${kind}${text}`;
}
