// The simulator runs the real authority, the real Redis store and the scripts' own Lua under seeded schedules of
// every fault it knows: no invariant broken. A failure names its seed and a minimal trace; `npm run simulate --
// --seed N` replays it. CI's schedules are split in parts (part.ts) that run in parallel workers: the first here.
import { describe, expect, it } from 'vitest';
import { FAULTS_END } from './plan.js';
import { explorePart } from './part.js';
import { planFor, simulate, type Plan } from './world.js';

explorePart(1);

describe('the Redis protocol under deterministic simulation', () => {
  it('replays a seed exactly', async () => {
    const seed = 4242;
    const first = await simulate(seed, planFor(seed), true);
    const second = await simulate(seed, planFor(seed), true);
    expect(second.trace).toEqual(first.trace);
    expect(first.trace.length).toBeGreaterThan(100);
    expect(Object.values(first.outcomes).reduce((sum, count) => sum + count, 0)).toBeGreaterThan(0);
  });
});

describe('situations kept as schedules', () => {
  it('the instance that knows the newest key cut off while Redis fails over to a lagging replica and another restarts: no violation', async () => {
    const plan: Plan = {
      instances: 3,
      replicas: 1,
      waitFor: 0,
      faults: [
        { at: 400, kind: 'replica-lag', length: 900 },
        { at: 450, kind: 'rotate', instance: 0 },
        { at: 700, kind: 'partition', instance: 0, length: 600, drop: true, way: 'both' },
        { at: 710, kind: 'failover', split: 0, side: [] },
        { at: 720, kind: 'crash', instance: 1, length: 50 },
      ],
    };
    const result = await simulate(11, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/rotate\(\) resolved/);
    expect(trace).toMatch(/failover from node 0/);
    expect(result.violation).toBeUndefined();
  });

  it('a split brain: a rotation on the deposed primary with `replicas` resolves only if a replica that takes over has it', async () => {
    const plan: Plan = {
      instances: 3,
      replicas: 2,
      waitFor: 2,
      faults: [
        { at: 400, kind: 'failover', split: 800, side: [0] },
        { at: 420, kind: 'rotate', instance: 0 },
        { at: 430, kind: 'rotate', instance: 1 },
      ],
    };
    const result = await simulate(13, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/split until/);
    expect(trace).toMatch(/p\d\/s0 rotate\(\) (resolved|rejected)/);
    expect(result.violation).toBeUndefined();
    expect(result.excused).toBe(0);
  });

  it("a split brain with 'majority': the deposed side's rotation is uncertain, and its record never goes over the other side's", async () => {
    // One replica, promoted: the deposed primary still lists it (until repl-timeout), so its WAIT cannot confirm.
    const plan: Plan = {
      instances: 3,
      replicas: 1,
      waitFor: 'majority',
      faults: [
        { at: 400, kind: 'failover', split: 450, side: [0] },
        { at: 440, kind: 'rotate', instance: 0 },
        { at: 480, kind: 'rotate', instance: 1 },
      ],
    };
    const result = await simulate(17, plan, true);
    const trace = result.trace.join('\n');
    const deposed = /p1\/s0 rotate\(\) rejected ERR_SAVE_UNCERTAIN \((\S+)\)/.exec(trace)?.[1];
    expect(deposed).toBeDefined();
    expect(trace).toMatch(/p2\/s1 rotate\(\) resolved/);
    // The promoted primary (node 1) never holds the deposed side's record, written forward or otherwise.
    expect(trace).not.toContain(`redis node 1 holds ${deposed ?? ''}`);
    expect(result.violation).toBeUndefined();
  });

  it("a split brain without `replicas`: the other side's record of a higher generation is not taken for newer by the deposed side's rotating instance", async () => {
    // Two rotations on the promoted side (generation 4), one on the deposed primary (3), each resolving. When the
    // split heals, the deposed side's instance finds a record whose line never names its own: the marker, then
    // the operator's rotation, never the other side's token.
    const plan: Plan = {
      instances: 3,
      replicas: 1,
      waitFor: 0,
      faults: [
        { at: 400, kind: 'failover', split: 600, side: [0] },
        { at: 410, kind: 'rotate', instance: 1 },
        { at: 440, kind: 'rotate', instance: 2 },
        { at: 450, kind: 'rotate', instance: 0 },
      ],
    };
    const result = await simulate(19, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/p1\/s0 rotate\(\) resolved/);
    expect(trace).toMatch(/p3\/s2 rotate\(\) resolved/);
    expect(trace).toMatch(/p1\/s0 SAVE\(\) on node 1: ok rollback:/);
    expect(result.violation).toBeUndefined();
  });

  it('a slot move during a rotation: it resolves once its instance trusts again, and that instance accepts the new token', async () => {
    // The rotation waits for a paused instance; the server changes meanwhile, so the rotating instance, which held
    // no trust in the record the new server holds, sits out a quarantine first.
    const plan: Plan = {
      instances: 3,
      replicas: 0,
      waitFor: 0,
      faults: [
        { at: 390, kind: 'pause', instance: 1, length: 300 },
        { at: 400, kind: 'rotate', instance: 0 },
        { at: 500, kind: 'slot-move' },
      ],
    };
    const result = await simulate(17, plan, true);
    expect(result.outcomes).toEqual({ resolved: 1 });
    expect(result.ownRefused).toBe(0);
    expect(result.violation).toBeUndefined();
  });

  it('an instance that adopts a newer key while its open() subscribes runs one chain of renewals and trusts it', async () => {
    // Redis comes back from an older dump; an instance that joins reads the older record, then hears the write-back
    // of the newer one while it subscribes.
    const plan: Plan = {
      instances: 2,
      replicas: 0,
      waitFor: 0,
      faults: [
        { at: 129, kind: 'cli-rotate' },
        { at: 229, kind: 'restart-dump', age: 28 },
        { at: 258, kind: 'join' },
        { at: 338, kind: 'join' },
      ],
    };
    const result = await simulate(222, plan, true);
    const joined = result.trace.filter((line) => line.includes('p5/s3 CONFIRM('));
    expect(result.violation).toBeUndefined();
    // Renewal numbers 1, 2, 3…, one at a time: never two renewals in one instant.
    expect(joined.length).toBeGreaterThan(10);
    expect(new Set(joined.map((line) => line.slice(0, 9))).size).toBe(joined.length);
  });

  it('a partition that holds messages, replaced by a shorter one: the instance can renew once what it held lands', async () => {
    // The commands sent under the first partition land when it would have ended; every later command queues behind
    // them on the same connection, though the second partition ended long before.
    const plan: Plan = {
      instances: 2,
      replicas: 0,
      waitFor: 0,
      faults: [
        { at: 138, kind: 'partition', instance: 1, length: 716, drop: false, way: 'out' },
        { at: 238, kind: 'partition', instance: 1, length: 16, drop: true, way: 'in' },
      ],
    };
    const result = await simulate(44336, plan, true);
    expect(result.violation).toBeUndefined();
    expect(result.refusedFor).toBeGreaterThan(0);
  });

  it("a save whose WAIT fails on a server that changed starts the instance's quarantine at its answer", async () => {
    // Redis fails over twice; instance 1 rotates while the replica it asks WAIT for lags behind: ERR_SAVE_UNCERTAIN,
    // but the save's answer came from the promoted server. Its quarantine starts there, not at a later renewal, so
    // it refuses the current token no longer than the docs say.
    const plan: Plan = {
      instances: 3,
      replicas: 2,
      waitFor: 1,
      saveTimeout: 6000,
      faults: [
        { at: 47, kind: 'failover', split: 0, side: [] },
        { at: 253, kind: 'cli-rotate' },
        { at: 381, kind: 'failover', split: 0, side: [] },
        { at: 403, kind: 'partition', instance: 2, length: 497, drop: true, way: 'both' },
        { at: 409, kind: 'partition', instance: 2, length: 88, drop: false, way: 'out' },
        { at: 432, kind: 'rotate', instance: 1 },
        { at: 447, kind: 'join' },
        { at: 495, kind: 'partition', instance: 1, length: 322, drop: true, way: 'out' },
        { at: 578, kind: 'join' },
        { at: 798, kind: 'rotate', instance: 0 },
      ],
    };
    const result = await simulate(15467, plan, true);
    expect(result.violation).toBeUndefined();
    expect(result.outcomes.ERR_SAVE_UNCERTAIN).toBeGreaterThan(0);
  });

  it('a one-shot authority without the watch, rotating over a record Redis lost, beaten by a write-back: ERR_SAVE_CONFLICT, never resolved', async () => {
    // Redis comes back empty from an old dump while the command rotates: its save goes over the missing record once,
    // and finds another instance's write-back there. It lost: the record it made was never stored.
    const plan: Plan = {
      instances: 3,
      replicas: 2,
      waitFor: 1,
      faults: [
        { at: 101, kind: 'join' },
        { at: 213, kind: 'restart-dump', age: 27 },
        { at: 268, kind: 'cli-rotate' },
        { at: 278, kind: 'restart-dump', age: 25 },
      ],
      unwatched: true,
    };
    const result = await simulate(419, plan, true);
    expect(result.violation).toBeUndefined();
    expect(result.outcomes.ERR_SAVE_CONFLICT).toBe(1);
  });

  it('a one-shot authority without the watch, rotating after a stall that grew while renewals waited: Redis runs them in order, nobody quarantines', async () => {
    // A second stall begins while instance 1's renewals wait on the first: when Redis wakes it runs them in the order
    // they arrived. Run out of order, the table would show its entry at an older renewal than Redis had confirmed,
    // which the instance takes for lost writes: it quarantines and refuses the command's new token past the bound.
    const plan: Plan = {
      instances: 2,
      replicas: 2,
      waitFor: 1,
      saveTimeout: 622,
      clocks: { spread: 0.0499 },
      faults: [
        { at: 171, kind: 'rotate', instance: 1 },
        { at: 234, kind: 'stall', length: 423 },
        { at: 370, kind: 'stall', length: 340 },
        { at: 485, kind: 'join' },
        { at: 518, kind: 'replica-lag', length: 344 },
        { at: 530, kind: 'rotate', instance: 1 },
        { at: 710, kind: 'cli-rotate' },
        { at: 786, kind: 'replica-lag', length: 114 },
      ],
      unwatched: true,
    };
    const result = await simulate(27, plan, true);
    const renewals = result.trace.flatMap((line) => {
      const match = /p2\/s1 CONFIRM\([^)]*,(\d+)\) on node/.exec(line);
      return match === null ? [] : [Number(match[1])];
    });
    expect(renewals.length).toBeGreaterThan(8);
    expect(renewals).toEqual([...renewals].sort((a, b) => a - b));
    expect(result.trace.join('\n')).toMatch(/p\d\/s3 rotate\(\) resolved/);
    expect(result.violation).toBeUndefined();
  });

  it("a rotation saved over another line's record, made on a Redis that went back, renews no trust in the held key", async () => {
    // Instance 0 holds the record a command-line rotation saved, cut off while Redis comes back from an older dump
    // and another command-line rotation resolves there; back, its own rotation saves over that rotation's record.
    const plan: Plan = {
      instances: 2,
      replicas: 2,
      waitFor: 'majority',
      saveTimeout: 6000,
      faults: [
        { at: 103, kind: 'partition', instance: 1, length: 563, drop: true, way: 'both' },
        { at: 341, kind: 'cli-rotate' },
        { at: 384, kind: 'partition', instance: 0, length: 386, drop: true, way: 'both' },
        { at: 430, kind: 'pause', instance: 1, length: 283 },
        { at: 431, kind: 'restart-dump', age: 19 },
        { at: 437, kind: 'slot-move' },
        { at: 445, kind: 'cli-rotate' },
        { at: 672, kind: 'rotate', instance: 0 },
        { at: 785, kind: 'rotate', instance: 0 },
      ],
    };
    const result = await simulate(39111, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/p\d\/s3 rotate\(\) resolved/);
    expect(trace).toMatch(/p1\/s0 SAVE\(\) on node 0: conflict/);
    expect(trace).toMatch(/p1\/s0 rotate\(\) resolved/);
    expect(result.violation).toBeUndefined();
  });

  it('two rotations given up on while Redis stalls: the second lands, its instance takes it up, and the first is not written back over it', async () => {
    // Two rotations on one instance, each given up on while Redis stalls (ERR_SAVE_UNCERTAIN). When the stall ends,
    // Redis runs the second one's save, then the instance's read, which finds that record, saved over the first.
    const plan: Plan = {
      instances: 2,
      replicas: 2,
      waitFor: 0,
      saveTimeout: 6000,
      faults: [
        { at: 60, kind: 'failover', split: 0, side: [] },
        { at: 91, kind: 'rotate', instance: 1 },
        { at: 173, kind: 'failover', split: 0, side: [] },
        { at: 290, kind: 'stall', length: 482 },
        { at: 339, kind: 'rotate', instance: 1 },
        { at: 654, kind: 'stall', length: 133 },
      ],
    };
    const result = await simulate(35094, plan, true);
    const trace = result.trace.join('\n');
    const given = [...trace.matchAll(/p2\/s1 rotate\(\) rejected ERR_SAVE_UNCERTAIN \((\S+)\)/g)].map(
      (match) => match[1],
    );
    expect(given).toHaveLength(2);
    const [first, second] = given as [string, string];
    expect(trace).toMatch(new RegExp(`p2/s1 now holds ${second}`));
    // The first record is not saved again over the second, and no instance takes anything for a rollback.
    expect(trace).not.toMatch(new RegExp(`holds ${first} \\(generation [3-9]`));
    expect(trace).not.toContain('rollback:');
    expect(result.violation).toBeUndefined();
  });

  it('a rotation saved over an empty Redis by an instance that missed a write-back: the instances that hold the written-back record take it up', async () => {
    // Redis comes back from an older dump; instance 1 writes the newest record back at a higher generation, and
    // Redis then restarts empty. Instance 0, cut off through the write-back, rotates over nothing: its record has
    // the write-back's generation, no `prev`, and a line that names the record it held. It replaced that record, so
    // the others adopt it. Taken for a rollback, it would be replaced by the marker, and after the second empty
    // restart an instance that had seen it would write back the record it replaced.
    const plan: Plan = {
      instances: 4,
      replicas: 1,
      waitFor: 1,
      saveTimeout: 6000,
      faults: [
        { at: 38, kind: 'partition', instance: 3, length: 393, drop: true, way: 'both' },
        { at: 62, kind: 'rotate', instance: 1 },
        { at: 75, kind: 'cli-rotate' },
        { at: 145, kind: 'rotate', instance: 3 },
        { at: 407, kind: 'partition', instance: 0, length: 208, drop: true, way: 'both' },
        { at: 409, kind: 'partition', instance: 1, length: 91, drop: true, way: 'both' },
        { at: 409, kind: 'partition', instance: 2, length: 105, drop: true, way: 'both' },
        { at: 417, kind: 'restart-dump', age: 19 },
        { at: 592, kind: 'restart-empty' },
        { at: 632, kind: 'rotate', instance: 0 },
        { at: 692, kind: 'restart-empty' },
      ],
    };
    const result = await simulate(514306, plan, true);
    const trace = result.trace.join('\n');
    const written = /p2\/s1 SAVE\(\) on node 0: ok (\S+)@4 /.exec(trace)?.[1];
    const rotated = /p6\/s0 SAVE\(\) on node 0: ok (\S+)@4 /.exec(trace)?.[1];
    expect(written).toBeDefined();
    expect(rotated).toBeDefined();
    expect(rotated).not.toBe(written);
    for (const process of ['p2/s1', 'p3/s2', 'p4/s3']) expect(trace).toContain(`${process} now holds ${rotated ?? ''}`);
    expect(trace.slice(0, trace.indexOf('"kind":"restart-empty"}', trace.indexOf(rotated ?? '')))).not.toContain(
      'ok rollback:',
    );
    expect(trace).not.toMatch(new RegExp(`holds ${written ?? ''} \\(generation [5-9]`));
    expect(result.violation).toBeUndefined();
  });

  it('a failback to a former primary that lags: the instance cut off throughout takes it for another server', async () => {
    // The deposed primary rejoins as a replica of the promoted one, lags, and is promoted again without the rotation
    // that resolved meanwhile. Its run_id and the table's epoch are those the cut-off instance knew; its replication id
    // is new, so that instance quarantines instead of trusting the revoked key at its first renewal.
    const plan: Plan = {
      instances: 3,
      replicas: 1,
      waitFor: 0,
      faults: [
        { at: 95, kind: 'partition', instance: 2, length: 565, drop: true, way: 'both' },
        { at: 100, kind: 'failover', split: 150, side: [] },
        { at: 252, kind: 'replica-lag', length: 400 },
        { at: 260, kind: 'rotate', instance: 0 },
        { at: 625, kind: 'partition', instance: 0, length: 200, drop: true, way: 'both' },
        { at: 625, kind: 'partition', instance: 1, length: 200, drop: true, way: 'both' },
        { at: 630, kind: 'failover', split: 0, side: [] },
      ],
    };
    for (const seed of [3, 4, 11]) {
      const result = await simulate(seed, plan, true);
      const trace = result.trace.join('\n');
      expect(trace).toMatch(/rotate\(\) resolved[\s\S]*failover from node 1 to node 0/);
      expect(result.violation).toBeUndefined();
    }
  });

  it('a rolling upgrade: no instance adopts the record of an instance of 0.2.0 that has the generation it holds', async () => {
    // Redis restarts from a dump taken before the rotation while both instances are cut off; an instance of 0.2.0
    // rotates over the record it went back to. Its record (without a line) has the generation of the one both
    // instances hold and another id: a rollback, reported and replaced by the marker, until the operator rotates.
    const plan: Plan = {
      instances: 2,
      replicas: 0,
      waitFor: 0,
      faults: [
        { at: 420, kind: 'rotate', instance: 0 },
        { at: 540, kind: 'partition', instance: 0, length: 80, drop: true, way: 'both' },
        { at: 540, kind: 'partition', instance: 1, length: 90, drop: true, way: 'both' },
        { at: 545, kind: 'restart-dump', age: 7 },
        { at: 590, kind: 'legacy-rotate' },
      ],
    };
    for (const seed of [1, 2, 3]) {
      const result = await simulate(seed, plan, true);
      const trace = result.trace.join('\n');
      expect(trace).toMatch(/rotate\(\) resolved[\s\S]*an instance of 0\.2\.0 saves/);
      expect(trace).toMatch(/an instance of 0\.2\.0 saves[\s\S]*onStoreError ERR_STORE_ROLLBACK/);
      expect(trace).toMatch(/the operator runs launcher-auth rotate/);
      expect(result.violation).toBeUndefined();
    }
  });

  it("a rolling upgrade through a split brain without `replicas`: the deposed side's rotating instance takes the record of an instance of 0.2.0 on the other side, of a higher generation, for newer, as documented", async () => {
    // A rotation resolves on each side (generation 2 on both); an instance of 0.2.0 then rotates on the promoted side
    // (generation 3, without a line). When the split heals, the instance whose rotation resolved on the deposed
    // primary judges that record by its generation alone (docs/several-instances.md) and adopts it.
    const plan: Plan = {
      instances: 2,
      replicas: 2,
      waitFor: 0,
      faults: [
        { at: 156, kind: 'failover', split: 661, side: [0] },
        { at: 182, kind: 'cli-rotate' },
        { at: 613, kind: 'legacy-rotate' },
        { at: 654, kind: 'rotate', instance: 0 },
      ],
    };
    const result = await simulate(130049, plan, true);
    const trace = result.trace.join('\n');
    const legacy = /an instance of 0\.2\.0 saves (\S+) over/.exec(trace)?.[1] ?? 'none';
    expect(trace).toMatch(/p3\/s2 rotate\(\) resolved[\s\S]*p1\/s0 rotate\(\) resolved/);
    expect(trace).toMatch(new RegExp(`p1/s0 rotate\\(\\) resolved[\\s\\S]*p1/s0 now holds ${legacy}`));
    expect(result.excused).toBeGreaterThan(0);
    expect(result.violation).toBeUndefined();
  });

  it('a renewal slow on the network as the healthy stretch ends: the instance refuses for at most a lease after', async () => {
    // The network's rare slow message goes on after the faults: a renewal may time out (slow both ways) and the next
    // one reach Redis just before the end, after the trust ran out. Which message is slow depends on every message
    // before it, so a connection that holds p2/s1's messages from 1500 ms until just before the end stands for it:
    // its renewals time out, the first reaches Redis at 1799 ms, and its answer comes after the end. The docs bound
    // a refusal while Redis is slow to answer by a lease after it; the instance still holds the current record.
    const plan: Plan = {
      instances: 3,
      replicas: 0,
      waitFor: 0,
      faults: [{ at: 1500, kind: 'partition', instance: 1, length: 298, drop: false, way: 'both' }],
    };
    const result = await simulate(559125, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/p2\/s1 refuses the current token -?\d+\.\d ms after its last slow message/);
    // The record it holds is the one Redis holds: the one it refuses at the end.
    const held = [...trace.matchAll(/redis node \d holds (\S+)/g)].map((match) => match[1]);
    expect(trace).toMatch(new RegExp(`p2/s1 CONFIRM\\(${held[held.length - 1] ?? '-'},,\\d+\\) on node 0: ok`));
    expect(result.violation).toBeUndefined();
  });

  it('a launcher started again after the faults, whose generation file remembers a record Redis lost, writes the marker after the operator looked: the operator rotates over it', async () => {
    // Instance 0 creates the first record and freezes while its save waits; Redis restarts from a dump without it,
    // and other rotations, a marker and a rotation over it, make another line. Its open() fails late; started again
    // during the healthy stretch, the process finds on its machine the record Redis lost, takes the other line's
    // record for a rollback and writes the marker, just after the operator looked for one.
    const plan: Plan = {
      instances: 2,
      replicas: 2,
      waitFor: 1,
      saveTimeout: 6000,
      unwatched: false,
      faults: [
        { at: 118, kind: 'partition', instance: 1, length: 286, drop: true, way: 'both' },
        { at: 153, kind: 'pause', instance: 0, length: 739 },
        { at: 203, kind: 'restart-dump', age: 15 },
        { at: 229, kind: 'slot-move' },
        { at: 322, kind: 'cli-rotate' },
        { at: 393, kind: 'rotate', instance: 1 },
        { at: 456, kind: 'restart-dump', age: 8 },
        { at: 470, kind: 'cli-rotate' },
        { at: 719, kind: 'pause', instance: 1, length: 133 },
        { at: 748, kind: 'rotate', instance: 1 },
        { at: 765, kind: 'partition', instance: 0, length: 135, drop: true, way: 'both' },
        { at: 844, kind: 'rotate', instance: 1 },
      ],
    };
    const result = await simulate(618639, plan, true);
    const trace = result.trace.join('\n');
    const late = /(\d+\.\d) ms +p\d+\/s0 SAVE\(\) on node 0: ok rollback:/.exec(trace.split('faults end')[1] ?? '');
    expect(Number(late?.[1])).toBeGreaterThan(FAULTS_END);
    expect(trace).toMatch(
      /p\d+\/s0 SAVE\(\) on node 0: ok rollback:[\s\S]*the operator runs launcher-auth rotate[\s\S]*p\d+\/s4 rotate\(\) resolved/,
    );
    expect(result.violation).toBeUndefined();
  });

  it("the operator's rotation over the marker timed out by a slow message: ERR_SAVE_UNCERTAIN, which the docs allow", async () => {
    // The one-shot command (without the watch) saves over the marker; the network's rare slow message, which goes on
    // after the faults, holds the save back past its command timeout: the outcome is uncertain, though the save stood.
    const plan: Plan = {
      instances: 2,
      replicas: 0,
      waitFor: 0,
      saveTimeout: 6000,
      unwatched: true,
      faults: [
        { at: 69, kind: 'jump', instance: 1, by: 4 },
        { at: 108, kind: 'slot-move' },
        { at: 143, kind: 'stall', length: 258 },
        { at: 282, kind: 'stall', length: 286 },
        { at: 342, kind: 'restart-empty' },
        { at: 354, kind: 'rotate', instance: 0 },
        { at: 407, kind: 'stall', length: 427 },
        { at: 423, kind: 'pause', instance: 1, length: 345 },
        { at: 434, kind: 'rotate', instance: 0 },
        { at: 504, kind: 'jump', instance: 0, by: 7 },
        { at: 668, kind: 'rotate', instance: 1 },
        { at: 717, kind: 'partition', instance: 0, length: 82, drop: false, way: 'in' },
        { at: 767, kind: 'jump', instance: 1, by: 1 },
        { at: 775, kind: 'replica-lag', length: 27 },
        { at: 796, kind: 'partition', instance: 1, length: 104, drop: true, way: 'both' },
        { at: 811, kind: 'rotate', instance: 0 },
      ],
    };
    const result = await simulate(57360, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/the operator runs launcher-auth rotate[\s\S]*rotate\(\) rejected ERR_SAVE_UNCERTAIN/);
    expect(result.violation).toBeUndefined();
  });

  it('a rotation resolves after Redis lost its record and got it back from a newer dump; a newcomer that opened on the older record in between may trust it for a lease: the documented exception', async () => {
    // Redis restarts from an older dump (473 ms), losing the rotation's record; an instance joins on a fresh machine
    // (487.5 ms), opens on the older record and is cut off; Redis restarts again from a newer dump holding a successor
    // of the lost record (492.5 ms). The rotating instance, cut off through both, resolves at its bound (622.6 ms).
    const plan: Plan = {
      instances: 3,
      replicas: 0,
      waitFor: 0,
      saveTimeout: 6000,
      unwatched: false,
      clocks: { spread: 0.0499, rates: { 2: 1.0499, 3: 0.9501 } },
      local: true,
      faults: [
        { at: 35, kind: 'partition', instance: 2, length: 454, drop: true, way: 'both' },
        { at: 106, kind: 'rotate', instance: 1 },
        { at: 405, kind: 'pause', instance: 0, length: 28.5 },
        { at: 413, kind: 'rotate', instance: 2 },
        { at: 419, kind: 'pause', instance: 1, length: 99 },
        { at: 433, kind: 'partition', instance: 2, length: 60, drop: false, way: 'out' },
        { at: 436.5, kind: 'partition', instance: 2, length: 56.5, drop: true, way: 'out' },
        { at: 444, kind: 'pause', instance: 2, length: 332 },
        { at: 455, kind: 'rotate', instance: 0 },
        { at: 463, kind: 'partition', instance: 0, length: 151, drop: true, way: 'both' },
        { at: 469, kind: 'partition', instance: 1, length: 231, drop: true, way: 'both' },
        { at: 473, kind: 'restart-dump', age: 20 },
        { at: 487.5, kind: 'join' },
        { at: 491.5, kind: 'partition', instance: 3, length: 408.5, drop: true, way: 'both' },
        { at: 492.5, kind: 'restart-dump', age: 2 },
        { at: 518.01, kind: 'partition', instance: 1, length: 379, drop: true, way: 'out' },
        { at: 518.1396829790552, kind: 'rotate', instance: 2 },
        { at: 519.5, kind: 'rotate', instance: 2 },
        { at: 728, kind: 'partition', instance: 0, length: 80, drop: false, way: 'in' },
        { at: 800, kind: 'partition', instance: 2, length: 100, drop: true, way: 'both' },
        { at: 817, kind: 'rotate', instance: 0 },
      ],
    };
    const result = await simulate(65873, plan, true);
    const trace = result.trace.join('\n');
    const older = /p5\/s3 opened on (\S+)/.exec(trace)?.[1];
    expect(trace).toMatch(/p2\/s1 rotate\(\) resolved/);
    expect(older).toBeDefined();
    expect(trace).not.toContain(`p2/s1 rotate() resolved ${older}`);
    expect(result.excused).toBeGreaterThan(0);
    expect(result.violation).toBeUndefined();
  });

  it('a rotation whose record Redis lost, finding a record of another line at a higher generation: ERR_SAVE_UNCERTAIN, not superseded', async () => {
    // The rotating instance, cut off while Redis went back and forth, saves over a Redis that went back (553.7 ms);
    // failovers and restores then bring back a record saved earlier on the other line, at a higher generation.
    const plan: Plan = {
      instances: 4,
      replicas: 0,
      waitFor: 0,
      saveTimeout: 6000,
      unwatched: false,
      faults: [
        { at: 34, kind: 'partition', instance: 2, length: 463, drop: true, way: 'both' },
        { at: 99, kind: 'rotate', instance: 3 },
        { at: 106, kind: 'restart-dump', age: 7 },
        { at: 109, kind: 'restart-dump', age: 33 },
        { at: 223, kind: 'pause', instance: 1, length: 625 },
        { at: 304, kind: 'restart-dump', age: 21 },
        { at: 395, kind: 'restart-dump', age: 2 },
        { at: 428, kind: 'rotate', instance: 0 },
        { at: 451, kind: 'partition', instance: 1, length: 117, drop: true, way: 'both' },
        { at: 453, kind: 'partition', instance: 0, length: 250, drop: true, way: 'both' },
        { at: 457, kind: 'partition', instance: 3, length: 205, drop: true, way: 'both' },
        { at: 458, kind: 'partition', instance: 2, length: 91, drop: false, way: 'out' },
        { at: 458, kind: 'restart-dump', age: 19 },
        { at: 460, kind: 'rotate', instance: 2 },
        { at: 468, kind: 'pause', instance: 3, length: 75 },
        { at: 496, kind: 'restart-dump', age: 40 },
        { at: 544, kind: 'partition', instance: 3, length: 356, drop: true, way: 'out' },
        { at: 618, kind: 'failover', split: 0, side: [] },
        { at: 648, kind: 'restart-dump', age: 10 },
        { at: 666, kind: 'pause', instance: 2, length: 17 },
        { at: 674, kind: 'restart-dump', age: 40 },
        { at: 675, kind: 'failover', split: 0, side: [] },
        { at: 739, kind: 'pause', instance: 1, length: 161 },
      ],
    };
    const result = await simulate(543470, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/p3\/s2 rotate\(\) rejected ERR_SAVE_UNCERTAIN/);
    expect(result.violation).toBeUndefined();
  });

  it('a rotation superseded while Redis loses the newer record: its instance never writes its own record back over it', async () => {
    // p1/s0's rotation (187 ms) waits for a crashed instance; its acknowledgement read shows p3/s2's rotation, saved
    // over it (391.9 ms); Redis then goes back to p1/s0's record (394 ms) and restarts empty (489 ms).
    const plan: Plan = {
      instances: 3,
      replicas: 1,
      waitFor: 'majority',
      saveTimeout: 6000,
      unwatched: false,
      faults: [
        { at: 138, kind: 'slot-move' },
        { at: 164, kind: 'slot-move' },
        { at: 187, kind: 'rotate', instance: 0 },
        { at: 229, kind: 'crash', instance: 1, length: 432 },
        { at: 238, kind: 'slot-move' },
        { at: 346, kind: 'rotate', instance: 2 },
        { at: 360, kind: 'slot-move' },
        { at: 394, kind: 'restart-dump', age: 11 },
        { at: 489, kind: 'restart-empty' },
      ],
    };
    const result = await simulate(93942, plan, true);
    const trace = result.trace.join('\n');
    const newer = /p3\/s2 rotate\(\) rejected ERR_SAVE_UNCERTAIN \((\S+)\)/.exec(trace)?.[1] ?? '-';
    expect(trace).toMatch(new RegExp(`p1/s0 PENDING\\(\\S+\\) on node 0: ok ${newer}@3`));
    expect(trace).toMatch(/p1\/s0 rotate\(\) rejected ERR_ROTATION_SUPERSEDED/);
    expect(trace).toMatch(/p1\/s0 load\(\) rejected ERR_STORE_ROLLBACK/);
    expect(result.violation).toBeUndefined();
  });

  it('a rotation superseded, then a failover to a replica without the newer record: its instance takes it for a rollback', async () => {
    // p2/s1's acknowledgement read shows the command-line rotation saved over its own (629.5 ms); the failover
    // (621 ms) promotes a replica that never received it, later restored from an older dump (757 ms).
    const plan: Plan = {
      instances: 2,
      replicas: 1,
      waitFor: 'majority',
      saveTimeout: 832,
      unwatched: false,
      faults: [
        { at: 108, kind: 'slot-move' },
        { at: 284, kind: 'slot-move' },
        { at: 508, kind: 'rotate', instance: 1 },
        { at: 618, kind: 'cli-rotate' },
        { at: 621, kind: 'failover', split: 279, side: [0] },
        { at: 673, kind: 'replica-lag', length: 227 },
        { at: 711, kind: 'slot-move' },
        { at: 757, kind: 'restart-dump', age: 27 },
      ],
    };
    const result = await simulate(628334, plan, true);
    const trace = result.trace.join('\n');
    const newer = /p3\/s2 rotate\(\) rejected ERR_SAVE_UNCERTAIN \((\S+)\)/.exec(trace)?.[1] ?? '-';
    expect(trace).toMatch(new RegExp(`p2/s1 PENDING\\(\\S+\\) on node 0: ok ${newer}@3`));
    expect(trace).toMatch(/p2\/s1 rotate\(\) rejected ERR_ROTATION_SUPERSEDED/);
    expect(trace).toMatch(/failover from node 0 to node 1/);
    expect(trace).toMatch(/p2\/s1 load\(\) rejected ERR_STORE_ROLLBACK/);
    expect(result.violation).toBeUndefined();
  });

  it('a rotation whose acknowledgements came in as its instance was cut off for longer than a lease: ERR_SAVE_UNCERTAIN, not a revoked token', async () => {
    // p4/s3's last acknowledgement read, held by a partition, lands at 355 ms just as a longer one cuts it off: every
    // instance had acknowledged, but its lease runs out meanwhile, the operator's rotation waits it out and resolves
    // (745 ms), and p4/s3's renewals on its record give up at 995 ms: that rotation may not resolve then.
    const plan: Plan = {
      instances: 4,
      replicas: 1,
      waitFor: 'majority',
      saveTimeout: 6000,
      unwatched: true,
      clocks: { spread: 0.0499, rates: { 3: 1.0499 } },
      local: true,
      faults: [
        { at: 37, kind: 'rotate', instance: 3 },
        { at: 83, kind: 'pause', instance: 3, length: 48 },
        { at: 300.315649109439, kind: 'partition', instance: 3, length: 55, drop: false, way: 'in' },
        { at: 355.315649109439, kind: 'partition', instance: 3, length: 544.6843508905611, drop: true, way: 'both' },
        { at: 390.315649109439, kind: 'cli-rotate' },
        { at: 418.315649109439, kind: 'pause', instance: 3, length: 315 },
      ],
    };
    const result = await simulate(8448, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/p6\/s4 rotate\(\) resolved/);
    expect(trace).toMatch(/p4\/s3 rotate\(\) rejected ERR_SAVE_UNCERTAIN/);
    expect(result.violation).toBeUndefined();
  });

  it("a rotation given up on while its instance is cut off: its renewals on the saved record keep the back-off's pace", async () => {
    // p2/s1's rotation rejects ERR_SAVE_UNCERTAIN (740 ms) while its store, cut off, still renews on the saved
    // record. Those renewals ran beside the timer's: each time one failed, the other went out at once (a renewal
    // 0.0 ms after the third failed one in a row, at 1037.5 ms). One at a time now, at the back-off's pace: the
    // partition ends, a renewal answered `stale` (942 ms) makes it reload and renew on the new record.
    const plan: Plan = {
      instances: 4,
      replicas: 0,
      waitFor: 0,
      saveTimeout: 365,
      unwatched: false,
      clocks: { spread: 0.0499, rates: { 1: 1.0499 } },
      local: true,
      faults: [
        { at: 45, kind: 'rotate', instance: 1 },
        { at: 83, kind: 'pause', instance: 1, length: 52 },
        { at: 314.315649109439, kind: 'partition', instance: 1, length: 51, drop: false, way: 'in' },
        { at: 365.315649109439, kind: 'partition', instance: 1, length: 534.6843508905611, drop: true, way: 'both' },
        { at: 392.315649109439, kind: 'cli-rotate' },
        { at: 418.315649109439, kind: 'pause', instance: 1, length: 300 },
      ],
    };
    const result = await simulate(4070, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/p2\/s1 rotate\(\) rejected ERR_SAVE_UNCERTAIN/);
    expect(trace).toMatch(/p2\/s1 CONFIRM\(\S+\) on node 0: stale/);
    expect(result.violation).toBeUndefined();
  });

  it("a rotation that waits out a quarantine while its renewals fail: the one at the quarantine's end keeps the back-off's pace", async () => {
    // p3/s2's rotation rejects ERR_SAVE_UNCERTAIN (754 ms) while its store still renews on the saved record; the
    // failover's new server answers it at 921 ms, a quarantine to wait out before the renewal that could grant
    // trust. Meanwhile the other instances write the rollback marker and the timer's renewals fail `stale` (1093,
    // 1150, 1222 ms). The renewal at the quarantine's end went out at once, 14.1 ms after the third failed one in a
    // row; it now waits for the back-off from that one's answer.
    const plan: Plan = {
      instances: 4,
      replicas: 1,
      waitFor: 0,
      saveTimeout: 360,
      unwatched: true,
      clocks: { spread: 0.0499, rates: { 2: 1.0499 } },
      local: true,
      faults: [
        { at: 26, kind: 'rotate', instance: 2 },
        { at: 66, kind: 'pause', instance: 2, length: 47 },
        { at: 209, kind: 'partition', instance: 2, length: 511, drop: true, way: 'both' },
        { at: 211, kind: 'failover', split: 87, side: [] },
        { at: 294.315649109439, kind: 'partition', instance: 2, length: 64, drop: false, way: 'in' },
        { at: 303, kind: 'replica-lag', length: 477 },
        { at: 328, kind: 'rotate', instance: 1 },
        { at: 358.315649109439, kind: 'partition', instance: 2, length: 541.6843508905611, drop: true, way: 'both' },
        { at: 392.315649109439, kind: 'cli-rotate' },
        { at: 412.315649109439, kind: 'pause', instance: 2, length: 342 },
        { at: 699, kind: 'partition', instance: 1, length: 201, drop: true, way: 'both' },
        { at: 699, kind: 'partition', instance: 3, length: 201, drop: true, way: 'both' },
        { at: 701, kind: 'partition', instance: 0, length: 199, drop: true, way: 'both' },
        { at: 708, kind: 'failover', split: 0, side: [] },
      ],
    };
    const result = await simulate(858993, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/p3\/s2 rotate\(\) rejected ERR_SAVE_UNCERTAIN/);
    expect(trace).toMatch(/p3\/s2 CONFIRM\(\S+\) on node 0: stale rollback:/);
    expect(result.violation).toBeUndefined();
  });

  it('a rotation from a shell overtaken by another from a shell during a failover: ERR_ROTATION_SUPERSEDED, which the docs allow', async () => {
    // Found as p3/s2's second rotation, queued behind its first since 30 ms, saving over the record of the operator's
    // rotation over the marker once the first rejected (docs/errors.md: a rotation overtaken by another is
    // superseded). With the store as it is now, the same faults no longer bring the marker: the first
    // `launcher-auth rotate` is overtaken by the second, which saves on the promoted replica first.
    const plan: Plan = {
      instances: 3,
      replicas: 1,
      waitFor: 0,
      saveTimeout: 6000,
      unwatched: true,
      clocks: { spread: 0.0499, rates: { 2: 1.0499 } },
      local: true,
      faults: [
        { at: 30, kind: 'rotate', instance: 2 },
        { at: 30, kind: 'rotate', instance: 2 },
        { at: 67, kind: 'pause', instance: 2, length: 53.58093715761788 },
        { at: 79, kind: 'pause', instance: 2, length: 54 },
        { at: 120.08093715761788, kind: 'partition', instance: 2, length: 172.3954662348795, drop: true, way: 'both' },
        { at: 185, kind: 'partition', instance: 1, length: 553, drop: true, way: 'both' },
        { at: 192, kind: 'failover', split: 90, side: [] },
        { at: 272.315649109439, kind: 'partition', instance: 2, length: 80, drop: false, way: 'in' },
        { at: 291, kind: 'replica-lag', length: 462 },
        { at: 292.9764033924974, kind: 'partition', instance: 2, length: 62.270716612166666, drop: false, way: 'in' },
        { at: 307, kind: 'rotate', instance: 2 },
        { at: 352.315649109439, kind: 'partition', instance: 2, length: 547.6843508905611, drop: true, way: 'both' },
        { at: 355.24712000466405, kind: 'partition', instance: 2, length: 544.7528799953359, drop: true, way: 'both' },
        { at: 376.24712000466405, kind: 'cli-rotate' },
        { at: 389.315649109439, kind: 'cli-rotate' },
        { at: 405.315649109439, kind: 'pause', instance: 2, length: 335 },
        { at: 684, kind: 'partition', instance: 2, length: 155, drop: true, way: 'both' },
        { at: 689, kind: 'partition', instance: 0, length: 202, drop: true, way: 'both' },
        { at: 691, kind: 'failover', split: 0, side: [] },
      ],
    };
    const result = await simulate(30036, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(
      /p6\/s4 SAVE\(\) on node 1: ok \S+@4[\s\S]*p5\/s3 rotate\(\) rejected ERR_ROTATION_SUPERSEDED/,
    );
    expect(result.violation).toBeUndefined();
  });

  it('a split brain without `replicas`: an instance on the promoted side that wrote its record back there sits its quarantine out', async () => {
    // p5/s0 found the promoted replica (node 1) empty (438.2 ms) and wrote its record back (454.9 ms); its next
    // renewals found that record there and ended its quarantine, so it accepted that token when p4/s3's rotation on
    // the deposed primary, which did not wait for it, resolved (about 725 ms), before 438.2 ms + leaseMs + driftMargin.
    // Its own save's conflict on the deposed primary (436 ms) now shows it p4/s3's record first: it takes node 1's for
    // the rollback it is and writes the rollback marker there instead (440.3 ms).
    const plan: Plan = {
      instances: 4,
      replicas: 2,
      waitFor: 0,
      saveTimeout: 6000,
      unwatched: false,
      faults: [
        { at: 123, kind: 'restart-dump', age: 13 },
        { at: 123, kind: 'partition', instance: 2, length: 451, drop: true, way: 'both' },
        { at: 131, kind: 'partition', instance: 1, length: 580, drop: true, way: 'both' },
        { at: 331, kind: 'restart-dump', age: 18 },
        { at: 355, kind: 'failover', split: 423, side: [2, 3] },
        { at: 378, kind: 'rotate', instance: 0 },
        { at: 424, kind: 'rotate', instance: 3 },
        { at: 654, kind: 'restart-dump', age: 38 },
      ],
    };
    const result = await simulate(723659, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/failover from node 0 to node 1 \(split until 778\)/);
    expect(trace).toMatch(/p5\/s0 CONFIRM\(\S+\) on node 1: stale -@0/);
    expect(trace).toMatch(/p5\/s0 SAVE\(\) on node 1: ok rollback:\S+@5/);
    expect(trace).toMatch(/p4\/s3 rotate\(\) resolved/);
    expect(result.violation).toBeUndefined();
  });

  it("a save's answer that its WAIT held past a slot move starts no second quarantine: the current token within a lease", async () => {
    // p2/s1's save is answered by the server the slot left after a renewal was answered by the new one; cut off and
    // stalled until the faults end, it then renews there and must trust the current record within the bound.
    const plan: Plan = {
      instances: 4,
      replicas: 1,
      waitFor: 1,
      faults: [
        { at: 66, kind: 'rotate', instance: 1 },
        { at: 116, kind: 'replica-lag', length: 410 },
        { at: 171, kind: 'slot-move' },
        { at: 222, kind: 'partition', instance: 0, length: 348, drop: true, way: 'both' },
        { at: 225, kind: 'stall', length: 233 },
        { at: 237, kind: 'rotate', instance: 2 },
        { at: 280, kind: 'rotate', instance: 0 },
        { at: 313, kind: 'rotate', instance: 3 },
        { at: 441, kind: 'stall', length: 459 },
        { at: 579, kind: 'rotate', instance: 2 },
      ],
      saveTimeout: 6000,
      unwatched: false,
      clocks: { spread: 0.0499 },
    };
    const result = await simulate(754947, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(
      /p2\/s1 SAVE\(\) on node 0: ok \S+ run (\S+)[\s\S]*p2\/s1 CONFIRM\([^)]*\) on node 0: ok \S+ run (?!\1)[\s\S]*p2\/s1 rotate\(\) rejected ERR_SAVE_UNCERTAIN/,
    );
    expect(result.violation).toBeUndefined();
  });

  it("an acknowledgement read answered by the server that Redis's restart replaced starts no second quarantine", async () => {
    // p3/s2's read, sent before the renewal that first reached the restarted server, is answered by the server before
    // the restart after that renewal's answer: the store's quarantine runs from the renewal's answer, the world's too.
    const plan: Plan = {
      instances: 3,
      replicas: 0,
      waitFor: 0,
      faults: [
        { at: 30, kind: 'rotate', instance: 1 },
        { at: 34, kind: 'partition', instance: 1, length: 405, drop: false, way: 'both' },
        { at: 79, kind: 'pause', instance: 1, length: 48.856298417784274 },
        { at: 127.35629841778427, kind: 'partition', instance: 1, length: 172.3954662348795, drop: true, way: 'both' },
        { at: 210, kind: 'slot-move' },
        { at: 286, kind: 'rotate', instance: 0 },
        { at: 300.2517646526638, kind: 'partition', instance: 1, length: 57.40769553737243, drop: false, way: 'in' },
        { at: 312, kind: 'rotate', instance: 1 },
        { at: 357.6594601900362, kind: 'partition', instance: 1, length: 542.3405398099637, drop: true, way: 'both' },
        { at: 378.6594601900362, kind: 'cli-rotate' },
        { at: 393, kind: 'rotate', instance: 2 },
        { at: 439, kind: 'restart-empty' },
        { at: 644, kind: 'rotate', instance: 2 },
        { at: 655, kind: 'partition', instance: 0, length: 245, drop: true, way: 'out' },
      ],
      saveTimeout: 6000,
      unwatched: false,
      clocks: { spread: 0.0499, rates: { 1: 1.0499 } },
      local: true,
    };
    const result = await simulate(846, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/restart-empty[\s\S]*p3\/s2 rotate\(\) resolved/);
    expect(result.violation).toBeUndefined();
  });

  it('a read of the acknowledgements that Redis ran before the renewal that created the table, taken in after it, starts no quarantine', async () => {
    // p3/s2 creates the instance table with its renewal seq 2 (89.0 ms) while it waits for its rotation's
    // acknowledgements, and is frozen from 92 ms to 886 ms. A read of the acknowledgements that Redis ran before that
    // renewal (no table yet) was taken in after its answer, and started a quarantine as if the table were lost:
    // p3/s2 refused the current token although every renewal from 945 ms found it, past a lease after 886 ms.
    const plan: Plan = {
      instances: 3,
      replicas: 1,
      waitFor: 0,
      saveTimeout: 6000,
      unwatched: true,
      faults: [
        { at: 52, kind: 'rotate', instance: 0 },
        { at: 57, kind: 'rotate', instance: 2 },
        { at: 92, kind: 'pause', instance: 2, length: 794 },
        { at: 232, kind: 'pause', instance: 1, length: 668 },
        { at: 272, kind: 'rotate', instance: 1 },
        { at: 284, kind: 'jump', instance: 0, by: 1 },
        { at: 443, kind: 'stall', length: 211 },
        { at: 654, kind: 'jump', instance: 0, by: 8 },
        { at: 684, kind: 'crash', instance: 1, length: 216 },
        { at: 690, kind: 'partition', instance: 0, length: 210, drop: false, way: 'in' },
        { at: 788, kind: 'pause', instance: 0, length: 37 },
      ],
    };
    const result = await simulate(806117, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/p3\/s2 CONFIRM\(\S+\) on node 0: ok \S+@2 run \S+ epoch \S+ seq 2/);
    expect(trace).toMatch(/p3\/s2 rotate\(\) rejected ERR_SAVE_UNCERTAIN/);
    expect(result.violation).toBeUndefined();
  });

  it("a record that a save's conflict showed is seen: an older one read next, on the promoted side of a split, is a rollback", async () => {
    // p4/s3's save, held on its way to node 0 across the failover, conflicts with p3/s2's rotation there (470 ms). The
    // promoted node 2, restored from a dump, holds the record p4/s3 trusts: it went on trusting it there without a
    // quarantine, and accepted its token when p3/s2's rotation resolved. It now takes the record it read there for the
    // rollback it is.
    const plan: Plan = {
      instances: 4,
      replicas: 2,
      waitFor: 0,
      saveTimeout: 602,
      unwatched: false,
      clocks: { spread: 0.03, rates: { 2: 1.03, 3: 0.97 } },
      local: true,
      faults: [
        { at: 382.8, kind: 'partition', instance: 3, length: 87.2, drop: false, way: 'out' },
        { at: 383, kind: 'rotate', instance: 3 },
        { at: 385, kind: 'failover', split: 403, side: [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11] },
        { at: 433, kind: 'rotate', instance: 2 },
        { at: 442, kind: 'partition', instance: 0, length: 176, drop: true, way: 'both' },
        { at: 443, kind: 'restart-dump', age: 18 },
      ],
    };
    const result = await simulate(271617, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/failover from node 0 to node 2 \(split until 788\)/);
    expect(trace).toMatch(/p4\/s3 SAVE\(\) on node 0: conflict[\s\S]*p4\/s3 rotate\(\) rejected ERR_SAVE_CONFLICT/);
    expect(trace).toMatch(/p4\/s3 onStoreError ERR_STORE_ROLLBACK/);
    expect(result.violation).toBeUndefined();
  });

  it("both sides of a split brain rotate: an instance keeps its side's record, seen first, over the other side's that a save of its own showed", async () => {
    // p4/s3, alone on the promoted side, holds the record that p6/s4 (launcher-auth rotate, opened there) saved at
    // generation 3 when its own save, held on its way to the deposed primary, conflicts there with p5/s1's record of
    // the same generation. It keeps the record it saw first, as docs/several-instances.md says, and accepts its
    // token after p5/s1's rotation resolves on the other side, until the split heals.
    const plan: Plan = {
      instances: 4,
      replicas: 1,
      waitFor: 0,
      saveTimeout: 6000,
      unwatched: false,
      clocks: { spread: 0.03, rates: { 1: 1.03, 3: 0.97 } },
      local: true,
      faults: [
        { at: 48, kind: 'rotate', instance: 0 },
        { at: 90, kind: 'pause', instance: 0, length: 53 },
        { at: 408.8, kind: 'partition', instance: 3, length: 90.2, drop: false, way: 'out' },
        { at: 409, kind: 'rotate', instance: 3 },
        { at: 412, kind: 'failover', split: 399, side: [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11] },
        { at: 414.315649109439, kind: 'cli-rotate' },
        { at: 439.315649109439, kind: 'pause', instance: 0, length: 341 },
        { at: 463, kind: 'rotate', instance: 1 },
      ],
    };
    const result = await simulate(530474, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/p6\/s4 rotate\(\) resolved (\S+)[\s\S]*p5\/s1 rotate\(\) resolved (?!\1)/);
    expect(trace).toMatch(/p4\/s3 SAVE\(\) on node 0: conflict \S+@3[\s\S]*p4\/s3 now holds/);
    expect(result.violation).toBeUndefined();
  });

  it("a save's conflict on the deposed primary, taken in after a renewal on the promoted replica: the held key's trust ends", async () => {
    // p2/s1's save, held on its way to node 0 across the failover, conflicts with p1/s0's rotation there. Its renewal,
    // sent later to the promoted node 1, which holds the record p2/s1 trusts, was taken in first and renewed that
    // trust on node 1, where p1/s0's rotation never looks: p2/s1 accepted the revoked token when that rotation
    // resolved, 238 ms after the conflict showed it the newer record. It now stops trusting at the conflict.
    const plan: Plan = {
      instances: 3,
      replicas: 2,
      waitFor: 0,
      saveTimeout: 898,
      unwatched: false,
      clocks: { spread: 0.03, rates: { 0: 1.03, 1: 0.97 } },
      local: true,
      faults: [
        { at: 399.8, kind: 'partition', instance: 1, length: 90.2, drop: false, way: 'out' },
        { at: 400, kind: 'rotate', instance: 1 },
        { at: 402, kind: 'failover', split: 413, side: [0, 2, 3, 4, 5, 6, 7, 8, 9, 10] },
        { at: 407, kind: 'rotate', instance: 0 },
        { at: 526, kind: 'partition', instance: 2, length: 88, drop: true, way: 'both' },
      ],
    };
    const result = await simulate(372672, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/p2\/s1 SAVE\(\) on node 0: conflict \S+@2[\s\S]*p2\/s1 CONFIRM\(\S+\) on node 1: ok/);
    expect(trace).toMatch(/p1\/s0 rotate\(\) resolved/);
    expect(result.violation).toBeUndefined();
  });

  it("a frozen instance's late answer, behind its command's timeout through two pauses, starts no quarantine", async () => {
    // p2/s1 is frozen from 405 ms to 900 ms by two pauses, the second begun before the first ended. The answer to an
    // acknowledgement read it sent at 343 ms to the promoted replica arrives at 676 ms, after that read's timeout came
    // due (441 ms). The store takes in what came due first, the timeout, and ignores the answer: its quarantine on the
    // promoted replica starts at a later answer there, which its rotation waits out.
    const plan: Plan = {
      instances: 2,
      replicas: 1,
      waitFor: 0,
      saveTimeout: 6000,
      unwatched: false,
      faults: [
        { at: 87, kind: 'rotate', instance: 1 },
        { at: 143, kind: 'partition', instance: 1, length: 607, drop: true, way: 'both' },
        { at: 177, kind: 'partition', instance: 1, length: 446, drop: false, way: 'both' },
        { at: 217, kind: 'rotate', instance: 1 },
        { at: 307, kind: 'failover', split: 461, side: [] },
        { at: 405, kind: 'pause', instance: 1, length: 335 },
        { at: 424, kind: 'rotate', instance: 0 },
        { at: 451, kind: 'pause', instance: 1, length: 449 },
        { at: 697, kind: 'partition', instance: 0, length: 79, drop: false, way: 'in' },
      ],
    };
    const result = await simulate(430532, plan, true);
    const trace = result.trace.join('\n');
    expect(trace).toMatch(/p2\/s1 PENDING\(\S+\) on node 1: ok/);
    expect(trace).toMatch(/p2\/s1 rotate\(\) rejected ERR_SAVE_UNCERTAIN/);
    expect(result.violation).toBeUndefined();
  });

  it(`keeps every fault before ${FAULTS_END} ms and heals after`, () => {
    for (let seed = 1; seed <= 200; seed += 1) {
      for (const fault of planFor(seed).faults) expect(fault.at).toBeLessThan(FAULTS_END);
    }
  });
});
