import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LocalEventBus } from '../../src/events/bus.js';
import { KeyWatches } from '../../src/services/key-watches.js';
import { ListenerWaits } from '../../src/services/listener-waits.js';
import { deadline } from '../support/deadline.js';

/** A wait that should end is given this long (a wait that should not end, a short window). */
const SETTLES_WITHIN_MS = deadline(5_000);

const settled = async (promise: Promise<unknown>, ms: number) => {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([promise.then(() => true), new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)))]);
  } finally {
    clearTimeout(timer);
  }
};

describe('listener waits', () => {
  test("an announcement wakes the listener's waiting requests only, and a waiter announced between reads does not wait", async () => {
    const bus = new LocalEventBus();
    const waits = new ListenerWaits(bus, async () => new Map(), 60_000);
    const never = new AbortController().signal;
    const a1 = waits.watch('a', never);
    const a2 = waits.watch('a', never);
    const b = waits.watch('b', never);
    const waitingA1 = a1.next(10_000, 1);
    const waitingA2 = a2.next(10_000, 1);
    const waitingB = b.next(10_000, 1);
    bus.publish({ topic: 'listener', deploymentId: '', listenerId: 'a' });
    assert.equal(await settled(Promise.all([waitingA1, waitingA2]), SETTLES_WITHIN_MS), true);
    assert.equal(await settled(waitingB, 50), false);
    // Announced while not waiting: the next wait returns at once, the one after waits again.
    bus.publish({ topic: 'listener', deploymentId: '', listenerId: 'a' });
    assert.equal(await settled(a1.next(10_000, 1), SETTLES_WITHIN_MS), true);
    assert.equal(await settled(a1.next(10_000, 1), 50), false);
    for (const watch of [a1, a2, b]) watch.close();
    assert.equal(await settled(waitingB, SETTLES_WITHIN_MS), true, 'close ends a wait');
    assert.equal(waits.size, 0);
  });

  test('the safety net reads every waited-on generation in one call and wakes the requests it has passed', async () => {
    const generations = new Map([
      ['a', 5],
      ['b', 3],
    ]);
    const reads: string[][] = [];
    const waits = new ListenerWaits(
      new LocalEventBus(),
      async (ids) => {
        reads.push([...ids].sort());
        return new Map([...generations].filter(([id]) => ids.includes(id)));
      },
      20,
    );
    const never = new AbortController().signal;
    const behind = waits.watch('a', never);
    const current = waits.watch('b', never);
    const gone = waits.watch('c', never);
    const waitingBehind = behind.next(10_000, 4);
    const waitingCurrent = current.next(10_000, 3);
    const waitingGone = gone.next(10_000, 7);
    assert.equal(await settled(Promise.all([waitingBehind, waitingGone]), SETTLES_WITHIN_MS), true, 'a grown generation and a deleted listener wake');
    assert.equal(await settled(waitingCurrent, 100), false, 'an unchanged generation does not');
    assert.deepEqual(reads[0], ['a', 'b', 'c']);
    generations.set('b', 4);
    assert.equal(await settled(waitingCurrent, SETTLES_WITHIN_MS), true);
    for (const watch of [behind, current, gone]) watch.close();
    const readsWhenIdle = reads.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(reads.length, readsWhenIdle, 'nothing is read while nobody waits');
  });

  test('a wait ends at its deadline and on abort', async () => {
    const waits = new ListenerWaits(new LocalEventBus(), async () => new Map([['a', 1]]), 60_000);
    const controller = new AbortController();
    const watch = waits.watch('a', controller.signal);
    const started = performance.now();
    await watch.next(30, 1);
    assert.ok(performance.now() - started >= 25);
    const waiting = watch.next(10_000, 1);
    controller.abort();
    assert.equal(await settled(waiting, SETTLES_WITHIN_MS), true);
    watch.close();
  });
});

describe('key watches', () => {
  test('a revocation here aborts at once; a key gone from the store aborts at the next check, in one read for all keys', async () => {
    const existing = new Set(['k1', 'k2', 'k3']);
    const reads: string[][] = [];
    const watches = new KeyWatches(async (ids) => {
      reads.push([...ids].sort());
      return new Set(ids.filter((id) => existing.has(id)));
    }, 20);
    const one = watches.watch('k1');
    const two = watches.watch('k2');
    const twoAgain = watches.watch('k2');
    const three = watches.watch('k3');
    watches.revoked('k1');
    assert.equal(one.signal.aborted, true);
    assert.equal(two.signal.aborted, false);
    existing.delete('k2');
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(two.signal.aborted, true);
    assert.equal(twoAgain.signal.aborted, true);
    assert.equal(three.signal.aborted, false);
    assert.deepEqual(reads[0], ['k1', 'k2', 'k3']);
    for (const watch of [one, two, twoAgain, three]) watch.stop();
    const readsWhenIdle = reads.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(reads.length, readsWhenIdle, 'nothing is read while nothing is watched');
  });

  test('a failed read is not a revocation', async () => {
    const watches = new KeyWatches(async () => {
      throw new Error('database away');
    }, 10);
    const watch = watches.watch('k1');
    await new Promise((resolve) => setTimeout(resolve, 60));
    assert.equal(watch.signal.aborted, false);
    watch.stop();
  });
});
