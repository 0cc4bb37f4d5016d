// The driver of a saved rotation's wait (ack-reader.ts): what it does with the record an acknowledgement read shows.
import { describe, expect, it } from 'vitest';
import type { Runtime } from 'launcher-auth/store-kit';
import { AckReader } from '../src/ack-reader.js';
import { AckWait } from '../src/acks.js';
import { until } from '../../../test/support/poll.js';
import type { Observed } from '../src/reply.js';
import { instance } from './instance.js';

const OPTIONS = { leaseMs: 1000, renewInterval: 100, driftMargin: 100 } as const;

const observed = (generation: number, id: string | null, prev: string): Observed => ({
  generation,
  id,
  prev,
  serverId: 'run',
  epoch: 'epoch',
  ownSeq: 1,
});

/** A PENDING answer as Redis sends it (REPLY_HEAD, then each instance waited on and its renewal number). */
const pendingReply = (generation: number, id: string, prev: string, ...waiting: Array<[string, number]>): unknown[] => [
  'ok',
  generation,
  id,
  prev,
  'run',
  'epoch',
  1,
  '',
  ...waiting.flat(),
];

/** A clock that stands still: the first read decides, no timer runs. */
const runtime: Runtime = { now: () => 10, timer: () => () => undefined, random: (bytes) => Buffer.alloc(bytes) };

describe('AckReader: the record an acknowledgement read shows', () => {
  it('a rotation that superseded the save is the newest record seen: Redis going back past it is a rollback', async () => {
    const { lease, history, era } = instance(OPTIONS);
    history.see(1, 'a', '');
    // This instance saved 'b' over 'a'; another rotation then saved 'c' over 'b' before every instance confirmed 'b'.
    history.wrote(2, 'b');
    const wait = new AckWait({
      generation: 2,
      id: 'b',
      savedAt: 0,
      saveReply: observed(2, 'b', 'a'),
      era,
      options: { ...OPTIONS, commandTimeout: 500 },
    });
    // A renewal on 'b' while it waits: this instance trusts 'b' (and could write it back after a rollback).
    const renewal = { seq: lease.nextSeq(), sentAt: 1, now: 2, heldId: 'b', canWriteForward: true };
    expect(lease.renewed({ status: 'ok', ...observed(2, 'b', 'a') }, renewal).trustUntil).toBe(901);
    const io = {
      pending: () => Promise.resolve(pendingReply(3, 'c', 'b')),
      drop: () => undefined,
      leaseUntil: () => 20,
    };
    const reader = new AckReader(io, 5, 'key', runtime);
    await expect(reader.wait(wait, history)).rejects.toMatchObject({ code: 'ERR_ROTATION_SUPERSEDED' });
    expect(history.newest).toEqual({ generation: 3, id: 'c' });
    // Redis goes back to 'b' (it lost 'c'): never adopted, whatever its generation.
    expect(history.see(2, 'b', 'a')).toBe('rollback');
    // Then restarts empty: 'b', which 'c' replaced, is not the record to write back; the marker is.
    const seq = lease.nextSeq();
    const step = lease.renewed({ status: 'stale', ...observed(0, null, '') }, { ...renewal, seq, sentAt: 15, now: 16 });
    expect(step.writeForward).toBeUndefined();
    expect(step.marker).toMatchObject({ expected: 0, expectedId: '', generation: 4 });
  });
});

describe('AckReader: the instance table after a resolved rotation', () => {
  it('removes the entries still waited on only once the latest of their leases may be over, not the earliest', async () => {
    let now = 0;
    const timers: Array<{ due: number; fire: () => void }> = [];
    const clock: Runtime = {
      now: () => now,
      timer: (ms, fire) => {
        const timer = { due: now + ms, fire };
        timers.push(timer);
        return () => {
          if (timers.includes(timer)) timers.splice(timers.indexOf(timer), 1);
        };
      },
      random: (bytes) => Buffer.alloc(bytes),
    };
    const { history, era } = instance(OPTIONS);
    history.see(1, 'a', '');
    history.wrote(2, 'b');
    const options = { ...OPTIONS, commandTimeout: 500 };
    const wait = new AckWait({
      generation: 2,
      id: 'b',
      savedAt: 0,
      saveReply: observed(2, 'b', 'a'),
      era,
      options,
    });
    // The first read shows one silent instance; the read at the bound shows it and another, first seen there.
    const answers = [pendingReply(2, 'b', 'a', ['early', 7]), pendingReply(2, 'b', 'a', ['early', 7], ['late', 8])];
    const dropped: Array<[string, number]> = [];
    const io = {
      pending: () => Promise.resolve(answers.shift()),
      drop: (instance: string) => void dropped.push([instance, now]),
      leaseUntil: () => Infinity,
    };
    now = 10;
    const resolved = new AckReader(io, 5, 'key', clock).wait(wait, history);
    expect(await until(() => timers.length === 1)).toBe(true);
    now = wait.bound + 1;
    timers.shift()?.fire();
    await resolved;
    // 'late' was first seen at the bound: the renewal behind it may have left a lease until then + leaseMs + driftMargin.
    const lateLeaseOver = wait.bound + 1 + options.leaseMs + options.driftMargin;
    expect(timers.map(({ due }) => due > lateLeaseOver)).toEqual([true]);
    now = timers[0]?.due ?? Number.NaN;
    timers.shift()?.fire();
    expect(dropped.map(([instance, at]) => [instance, at > lateLeaseOver])).toEqual([
      ['early', true],
      ['late', true],
    ]);
  });
});
