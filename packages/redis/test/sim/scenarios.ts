// Focused scenarios: fault combinations that the swarm draws too rarely on its own, each added to a share of the
// plans. Each scenario draws from a stream of its own (its salt), so that adding one changes no other scenario's
// faults and nothing of the plans that do not draw it.
import { FAULTS_END, RATE_SPREAD, TIMING, WIDE_SPREAD, type Fault, type Plan } from './plan.js';
import { Prng } from './prng.js';

/** What a scenario may read of the plan it joins. */
export interface Shape {
  readonly instances: number;
  readonly replicas: number;
}

export interface Scenario {
  /** What it sets up, for the reader of a trace. */
  readonly name: string;
  /** Its stream: `seed ^ salt`. */
  readonly salt: number;
  /** The share of the plans that draw it. */
  readonly share: number;
  readonly faults: (rng: Prng, shape: Shape) => readonly Fault[];
  /** The world its plans run in, read from its faults (which may name the instances it sets apart). */
  readonly settings?: (faults: readonly Fault[]) => Settings;
  /**
   * Its faults replace the swarm's (but for other scenarios'): for a combination that any other fault at the wrong
   * moment undoes (a third failover, a write-back by an instance that should be cut off).
   */
  readonly alone?: boolean;
}

/** What a scenario may set of the world besides faults. */
export type Settings = Partial<Pick<Plan, 'clocks' | 'local' | 'waitFor' | 'saveTimeout'>>;

/**
 * An instance paused past a renewal's time renews the moment it resumes and is cut off right after (what it sends is
 * lost, so it never acknowledges what follows); a fraction of a millisecond later another instance rotates. On
 * clocks at the documented bound (the paused one slow, the rotating one fast) and a loopback Redis, the rotation
 * resolves at its bound (330 ms on the fast clock) up to 1.4 ms before a lease counted without the drift margin
 * (300 ms on the slow one) would end: the margin is what covers the drift.
 */
function renewalJustBeforeRotation(rng: Prng, { instances }: Shape): Fault[] {
  if (instances < 2) return [];
  const renewing = rng.int(0, instances - 1);
  const rotating = (renewing + rng.int(1, instances - 1)) % instances;
  // Once the first instance has opened (its first save waits out a lease), and early enough for the rotation to
  // resolve before the faults end (the cut-off instance would then acknowledge it).
  const resumes = rng.int(TIMING.leaseMs + 80, FAULTS_END - TIMING.leaseMs - 20);
  const paused = rng.int(TIMING.renewInterval + 20, 3 * TIMING.renewInterval);
  return [
    { at: resumes - paused, kind: 'pause', instance: renewing, length: paused },
    { at: resumes + 0.01, kind: 'partition', instance: renewing, length: rng.int(350, 500), drop: true, way: 'out' },
    { at: resumes + 0.1 + rng.float() * 0.05, kind: 'rotate', instance: rotating },
  ];
}

/**
 * A save held on its way to Redis (a partition that holds what the rotating instance sends) for most of a command
 * timeout, while another instance renews once more just before the save runs and is cut off right after (a pause
 * that ends then sends its renewal at once; what it sends afterwards is lost): that renewal's lease ends well after
 * a bound counted from when the save was sent rather than from its answer (saved-at-before-send).
 */
function savedAtBeforeSend(rng: Prng, { instances }: Shape): Fault[] {
  if (instances < 2) return [];
  // Once every instance has opened (the one that created the secret waits about a lease for its table), and early
  // enough that the rotation's bound passes before the faults end.
  const at = rng.int(400, 460);
  const rotating = rng.int(0, instances - 1);
  const silent = (rotating + rng.int(1, instances - 1)) % instances;
  // Past a renewal interval, and within the command timeout (the save's answer must come back in time).
  const hold = rng.int(80, 92);
  // The silent instance's renewal timer fires during its pause: the renewal goes out as the pause ends.
  const resume = at + hold - rng.int(3, 6);
  return [
    { at, kind: 'partition', instance: rotating, length: hold, drop: false, way: 'out' },
    { at: at + rng.int(0, 2), kind: 'rotate', instance: rotating },
    { at: resume - 75, kind: 'pause', instance: silent, length: 75 },
    { at: resume + 1, kind: 'partition', instance: silent, length: rng.int(300, 450), drop: true, way: 'out' },
  ];
}

/**
 * An instance whose era began on a Redis without an instance table (its `open()` read the secret before any
 * renewal had created one) is cut off before its first renewal is answered; a rotation elsewhere resolves without
 * it; Redis restarts from a dump taken before that rotation, which holds the older record and a table; the
 * instances that know the newer record are cut off around the restart, and the first one heals before them. Its
 * first answer comes from another server than its `open()` read: it must sit out the quarantine like any other.
 */
function eraFirstWithoutRunId(rng: Prng, { instances }: Shape): Fault[] {
  if (instances < 2) return [];
  // Not instance 0: it creates the secret, and its open() waits for a lease, past any table.
  const target = rng.int(1, instances - 1);
  const others = Array.from({ length: instances }, (_, index) => index).filter((index) => index !== target);
  // Another opener rotates early; with two instances, the creator does, once it has opened.
  const rotator = instances > 2 ? rng.pick(others.filter((index) => index !== 0)) : 0;
  const rotateAt = rotator === 0 ? rng.int(400, 440) : rng.int(60, 250);
  // Past the rotation's bound (a lease and the drift margin after its save): it has resolved.
  const restartAt = rotateAt + rng.int(350, 420);
  // A dump (one every 20 ms from 10 ms) from before the rotation, and from after 50 ms, when a table stands.
  const lastDump = 10 + 20 * Math.floor((restartAt - 10) / 20);
  const age = Math.min(
    Math.floor((lastDump - rotateAt) / 20) + 1 + rng.int(0, 1),
    Math.floor((lastDump - 50) / 20) + 1,
  );
  const heal = restartAt + rng.int(5, 40);
  const cut = rng.int(25, 55);
  const faults: Fault[] = [
    { at: cut, kind: 'partition', instance: target, length: heal - cut, drop: true, way: 'both' },
    { at: rotateAt, kind: 'rotate', instance: rotator },
    { at: restartAt, kind: 'restart-dump', age },
  ];
  for (const other of others) {
    const length = rng.int(80, 250);
    faults.push({
      at: restartAt - rng.int(0, 10),
      kind: 'partition',
      instance: other,
      length,
      drop: true,
      way: 'both',
    });
  }
  return faults;
}

/**
 * A failback: a failover with a split deposes the primary, which rejoins as a replica of the promoted one and then
 * lags behind it; a rotation resolves on the promoted one; a second failover promotes the former primary again
 * (with one replica, always), which lacks that rotation's record. One instance is cut off from before the first
 * failover until after the second, and the others are cut off around the second. The former primary keeps its
 * `run_id` and the table's epoch: only its new replication id tells the cut-off instance that it is another server.
 */
function failback(rng: Prng, { instances, replicas }: Shape): Fault[] {
  if (instances < 2 || replicas < 1) return [];
  // Not instance 0, which creates the secret: cut off while still opening, it would trust nothing before.
  const cutOff = rng.int(1, instances - 1);
  const rotating = (cutOff + rng.int(1, instances - 1)) % instances;
  // Once every instance has opened (the first one's open() waits for its table).
  const firstAt = rng.int(150, 220);
  const rejoinsAt = firstAt + rng.int(80, 160);
  const lagsAt = rejoinsAt + rng.int(1, 10);
  const rotateAt = lagsAt + rng.int(5, 30);
  // Past the rotation's bound (a lease and the drift margin after its save): it has resolved.
  const backAt = rotateAt + TIMING.leaseMs + TIMING.driftMargin + rng.int(20, 60);
  const from = firstAt - rng.int(2, 10);
  const faults: Fault[] = [
    { at: from, kind: 'partition', instance: cutOff, length: backAt + rng.int(10, 60) - from, drop: true, way: 'both' },
    { at: firstAt, kind: 'failover', split: rejoinsAt - firstAt, side: [] },
    { at: lagsAt, kind: 'replica-lag', length: backAt - lagsAt + rng.int(10, 100) },
    { at: rotateAt, kind: 'rotate', instance: rotating },
    { at: backAt, kind: 'failover', split: 0, side: [] },
  ];
  for (let other = 0; other < instances; other += 1) {
    if (other === cutOff) continue;
    faults.push({
      at: backAt - rng.int(2, 10),
      kind: 'partition',
      instance: other,
      length: rng.int(150, 250),
      drop: true,
      way: 'both',
    });
  }
  return faults;
}

/**
 * An instance frozen through a rotation (it never acknowledges it, so the rotation resolves at its bound and drops
 * its entry a moment later) resumes while the rotating instance's last acknowledgement read is held on its way back:
 * it adopts the record and acknowledges it between that read and the housekeeping DROP, then is cut off. The DROP
 * must leave the renewed entry alone: a back-to-back rotation would otherwise find no one to wait for while the cut-off
 * instance still trusts the record it revokes.
 */
function luaDropIgnoresSeq(rng: Prng, { instances }: Shape): Fault[] {
  if (instances < 2) return [];
  const rotating = rng.int(0, instances - 1);
  const silent = (rotating + rng.int(1, instances - 1)) % instances;
  // Once every instance has opened, and early enough for the second rotation to resolve before the faults end.
  const rotateAt = rng.int(400, 460);
  // Held from just before the bound (a lease and the drift margin after the save, on a clock within 3 % of true
  // time) until past it, but within a command timeout of the read in flight: that read, or the next one, ran on
  // Redis before the bound and is answered after it.
  const holdAt = rotateAt + rng.int(272, 285);
  const hold = rng.int(75, 85);
  // After the held read ran on Redis, and early enough for a reload and a renewal to land before the DROP.
  const resume = holdAt + rng.int(23, hold - 15);
  const pauseAt = rotateAt - rng.int(5, 20);
  return [
    { at: pauseAt, kind: 'pause', instance: silent, length: resume - pauseAt },
    { at: rotateAt, kind: 'rotate', instance: rotating },
    { at: holdAt, kind: 'partition', instance: rotating, length: hold, drop: false, way: 'in' },
    { at: resume + rng.int(22, 30), kind: 'partition', instance: silent, length: 450, drop: true, way: 'both' },
    { at: holdAt + hold + rng.int(8, 20), kind: 'rotate', instance: rotating },
  ];
}

/**
 * A rotation whose instance freezes early in its wait (its lease runs out) and is cut off as it resumes, then hears
 * again only as its bound passes: an acknowledgement read that Redis ran before any other rotation is answered then,
 * and the instance is cut off again for good; a `launcher-auth rotate` saves over its record and resolves at its own
 * bound. The rotation must not resolve on that read: its lease is over. The renewal it makes before resolving keeps
 * failing, and gives up only two quarantines later (660 ms on its clock): on a clock at the documented bound's fast
 * end, with Redis on loopback and the rotation as early as an instance can open, its last try is sent just before
 * the faults end.
 */
function acksResolveWithoutOwnLease(rng: Prng, { instances }: Shape): Fault[] {
  if (instances < 2) return [];
  // Not instance 0, which mostly creates the secret (its open() then waits for a lease).
  const rotating = rng.int(1, instances - 1);
  const rotateAt = 30;
  // Once its save was answered; its last renewal then leaves it no lease at the bound.
  const frozen = rotateAt + rng.int(35, 50);
  const resume = rng.int(116, 127) + rng.float();
  // On resuming, cut off: its renewal and its read go nowhere. Each times out after commandTimeout; the read is sent
  // again a poll later, the renewal a renewInterval later, and both go nowhere again. The next read finds Redis
  // answering, though what Redis sends is held: its answer comes as the bound has passed, while the renewal sent
  // before is still in flight (the renewal made before resolving waits for it, which sets when it gives up).
  const ms = (local: number): number => local / (1 + WIDE_SPREAD);
  const { commandTimeout, ackPollInterval, renewInterval } = TIMING;
  const read = resume + 2 * (ms(commandTimeout) + ms(ackPollInterval));
  const renewal = resume + ms(commandTimeout) + ms(renewInterval);
  const heard = read + 1 + rng.float() * 7;
  return [
    { at: rotateAt, kind: 'rotate', instance: rotating },
    { at: frozen, kind: 'pause', instance: rotating, length: resume - frozen },
    { at: resume - 0.5, kind: 'partition', instance: rotating, length: renewal + 20 - resume, drop: true, way: 'both' },
    { at: renewal + 20, kind: 'partition', instance: rotating, length: heard - renewal - 20, drop: false, way: 'in' },
    { at: heard, kind: 'partition', instance: rotating, length: FAULTS_END, drop: true, way: 'both' },
    { at: heard + rng.int(2, 30), kind: 'cli-rotate' },
  ];
}

/**
 * An acknowledgement read held on its way to Redis across a restart from a dump: the dump holds the rotation's record
 * but not the entry of an instance that joined after it, acknowledged, and was cut off just before the restart. The
 * read's answer starts the new era: its quarantine and the table's completeness count from that answer, not from when
 * the read was sent (some 50 ms earlier), or a back-to-back rotation resolves on the restored table, which lacks the
 * cut-off instance, while that instance still trusts the record it revokes. On clocks at the documented bound (the
 * rotating one fast, the joining one slow) and a loopback Redis, counted from the answer the table is complete some
 * 30 ms after the cut-off instance's trust ends; counted from the sending, some 20 to 30 ms before.
 */
function readTimeBeforeAnswer(rng: Prng, { instances }: Shape): Fault[] {
  if (instances < 2) return [];
  const rotating = rng.int(0, instances - 1);
  const frozen = (rotating + rng.int(1, instances - 1)) % instances;
  // Once every instance has opened (the one that created the secret waits about a lease for its table).
  const rotateAt = rng.int(400, 440);
  // Within the rotation's wait (its bound is a lease and the drift margin after its save), half a millisecond off
  // the dumps (one every 20 ms from 10 ms), which a fault at the same time would precede.
  const restartAt = rotateAt + rng.int(70, 100) + 0.5;
  // An instance frozen through the save acknowledges it as it resumes: announced by pub/sub, that wakes the rotating
  // instance's read at once, which is held until Redis is back (answered within a command timeout of being sent).
  // What it sends next is lost, so that the read's answer is the first it takes in from the restarted Redis.
  const resume = restartAt - rng.int(58, 64);
  const frozenAt = rotateAt - rng.int(5, 15);
  const joinAt = restartAt - rng.int(3, 5);
  const dumpsBefore = (at: number): number => Math.floor((at - 10) / 20) + 1;
  // The last dump before the instance joined: it holds the rotation's record, not the joined instance's entry.
  const age = dumpsBefore(restartAt) - dumpsBefore(joinAt) + 1;
  return [
    { at: frozenAt, kind: 'pause', instance: frozen, length: resume - frozenAt },
    { at: rotateAt, kind: 'rotate', instance: rotating },
    {
      at: resume - 0.5,
      kind: 'partition',
      instance: rotating,
      length: restartAt - resume + 1,
      drop: false,
      way: 'out',
    },
    { at: resume + 3, kind: 'partition', instance: rotating, length: restartAt - resume - 2.5, drop: true, way: 'out' },
    { at: joinAt, kind: 'join' },
    // The joined instance, whose slot comes after the plan's instances: after its first renewal, cut off for good.
    { at: restartAt - 1, kind: 'partition', instance: instances, length: 450, drop: true, way: 'both' },
    { at: restartAt, kind: 'restart-dump', age },
    { at: restartAt + rng.int(5, 50), kind: 'rotate', instance: rotating },
  ];
}

/**
 * Three slot moves during one rotation, one of them hidden for a while: the first while it waits for an
 * acknowledgement (another instance is frozen through its save), so that it resolves only at its bound, inside the
 * quarantine that move began; the rotating instance is then cut off, and the second move happens meanwhile, so
 * that it first hears from that server, and quarantines, only about two quarantines after its bound (660 ms on its
 * clock); the third move comes during that quarantine. However often the server changes, a rotation waits out its
 * instance's quarantine before it resolves; one that gave up waiting at that limit would resolve inside the third.
 */
function givesUpInQuarantine(rng: Prng, { instances }: Shape): Fault[] {
  if (instances < 2) return [];
  // Not instance 0, which mostly creates the secret (its open() then waits for a lease).
  const rotating = rng.int(1, instances - 1);
  const silent = (rotating + rng.int(1, instances - 1)) % instances;
  // Once it has opened, and early: the third move comes before the faults end.
  const rotateAt = rng.int(80, 110);
  const cut = rotateAt + rng.int(380, 420);
  const heal = rotateAt + rng.int(680, 700);
  return [
    { at: rotateAt - rng.int(1, 10), kind: 'pause', instance: silent, length: rng.int(360, 420) },
    { at: rotateAt, kind: 'rotate', instance: rotating },
    { at: rotateAt + rng.int(150, 300), kind: 'slot-move' },
    { at: cut, kind: 'partition', instance: rotating, length: heal - cut, drop: true, way: 'both' },
    { at: cut + rng.int(20, 200), kind: 'slot-move' },
    { at: Math.min(heal + rng.int(40, 180), FAULTS_END - 10), kind: 'slot-move' },
  ];
}

/**
 * A rolling upgrade: a rotation that every instance adopts; Redis restarts from a dump taken before it (the older
 * record, generation g); while the instances are cut off around the restart, an instance of 0.2.0 rotates over that
 * record, and its record, without a line, has the generation of the one every instance holds (g + 1) and another id.
 * It did not replace what they hold: each must take it for the rollback it is, never adopt it.
 */
function rollbackSameGeneration(rng: Prng, { instances }: Shape): Fault[] {
  // Once every instance has opened (the first one's open() waits for its table).
  const rotateAt = rng.int(400, 460);
  // Once every instance has adopted the rotation's record (pub/sub, or its next renewal).
  const restartAt = rotateAt + rng.int(80, 200);
  // A dump (one every 20 ms from 10 ms) from before the rotation was sent.
  const lastDump = 10 + 20 * Math.floor((restartAt - 10) / 20);
  const age = Math.floor((lastDump - rotateAt) / 20) + 2 + rng.int(0, 1);
  // Past the restart's downtime (at most 30 ms).
  const legacyAt = restartAt + rng.int(31, 60);
  const faults: Fault[] = [
    { at: rotateAt, kind: 'rotate', instance: rng.int(0, instances - 1) },
    { at: restartAt, kind: 'restart-dump', age },
    { at: legacyAt, kind: 'legacy-rotate' },
  ];
  for (let instance = 0; instance < instances; instance += 1) {
    const from = restartAt - rng.int(0, 10);
    const length = legacyAt + rng.int(5, 60) - from;
    faults.push({ at: from, kind: 'partition', instance, length, drop: true, way: 'both' });
  }
  return faults;
}

/**
 * A rotation superseded while it waits, then lost: instance A rotates while a third instance is cut off (A's wait
 * lasts until that instance's lease is over); B rotates over A's record and is cut off right after its save. What
 * Redis sends A is held meanwhile (not lost: less than a command timeout) while Redis restarts from a dump taken
 * between the two saves (it holds A's record, not B's): A takes in the acknowledgement read that shows B's record,
 * then reads the restored Redis. Redis then restarts empty. A saw B's record: it must take its own for the rollback
 * it is, never trust it again nor write it forward over the empty Redis.
 */
function supersededThenLost(rng: Prng, { instances }: Shape): Fault[] {
  if (instances < 3) return [];
  const a = rng.int(0, instances - 1);
  const b = (a + rng.int(1, instances - 1)) % instances;
  let c = rng.int(0, instances - 1);
  while (c === a || c === b) c = (c + 1) % instances;
  // Once every instance has opened; B's save well after a dump that follows A's, and before A's wait ends.
  const first = rng.int(400, 480);
  const second = first + rng.int(45, 150);
  // After A's next acknowledgement read (one every ackPollInterval), from a dump (one every 20 ms from 10 ms)
  // taken in the 20 ms before B's save, hence after A's.
  const restartAt = second + rng.int(TIMING.ackPollInterval, 2 * TIMING.ackPollInterval);
  const lastDump = 10 + 20 * Math.floor((restartAt - 10) / 20);
  const age = Math.floor((lastDump - second) / 20) + 2;
  const emptyAt = restartAt + rng.int(60, 120);
  const healAt = emptyAt + rng.int(60, 150);
  const cutC = first - rng.int(5, 40);
  const cutB = second + rng.int(1, 4);
  // Held from just before B's save until Redis is back (a restart takes at most 30 ms).
  const holdA = second - rng.int(2, 6);
  return [
    { at: cutC, kind: 'partition', instance: c, length: healAt - cutC, drop: true, way: 'both' },
    { at: first, kind: 'rotate', instance: a },
    { at: second, kind: 'rotate', instance: b },
    { at: cutB, kind: 'partition', instance: b, length: healAt - cutB, drop: true, way: 'both' },
    { at: holdA, kind: 'partition', instance: a, length: restartAt + rng.int(31, 40) - holdA, drop: false, way: 'in' },
    { at: restartAt, kind: 'restart-dump', age },
    { at: emptyAt, kind: 'restart-empty' },
  ];
}

/**
 * A rotation made early (its instance has known the table for less than a lease, so it waits for its bound) whose
 * acknowledgement reads are held on their way back past the bound and land just as its instance is cut off for
 * longer than a lease; it is frozen for a while besides. A rotation made from a shell then waits that instance's
 * lease out and resolves: the first rotation, whose renewals on its record never get through, must not resolve.
 */
function leaseRanOutAfterAcks(rng: Prng, { instances }: Shape): Fault[] {
  const a = rng.int(0, instances - 1);
  const rotateAt = rng.int(20, 50);
  // Its bound: leaseMs + driftMargin after the save, on a clock that runs fast (see the settings).
  const bound = rotateAt + (TIMING.leaseMs + TIMING.driftMargin) / (1 + WIDE_SPREAD);
  const landAt = bound + rng.int(3, 20);
  const holdAt = landAt - rng.int(50, 80);
  return [
    { at: rotateAt, kind: 'rotate', instance: a },
    { at: rotateAt + rng.int(35, 50), kind: 'pause', instance: a, length: rng.int(40, 55) },
    { at: holdAt, kind: 'partition', instance: a, length: landAt - holdAt, drop: false, way: 'in' },
    { at: landAt, kind: 'partition', instance: a, length: FAULTS_END - landAt, drop: true, way: 'both' },
    { at: landAt + rng.int(15, 40), kind: 'cli-rotate' },
    { at: landAt + rng.int(50, 65), kind: 'pause', instance: a, length: rng.int(300, 360) },
  ];
}

/**
 * One rotation in a healthy world, once every instance has been in the instance table for longer than a lease: no
 * fault at all besides it. docs/several-instances.md: "Normally `rotate()` takes a few milliseconds", resolving on the
 * acknowledgements of a table known to be complete rather than at its bound.
 */
function healthyRotation(rng: Prng, { instances }: Shape): Fault[] {
  return [{ at: rng.int(450, 800), kind: 'rotate', instance: rng.int(0, instances - 1) }];
}

/**
 * A save whose `WAIT` outlasts a slot move: the replicas lag behind the primary (each replica-lag holds back each
 * replica at random; four of them hold back both of two nearly nine times in ten), so that the rotating instance's save,
 * held on its way to Redis besides, waits out the replicas' timeout and is answered past the command timeout. The
 * slot moves meanwhile, and the next renewal (a renewal interval after the one sent with the save, which is sooner
 * than the replicas' timeout on a clock at the documented bound's fast end) is answered by the new server just
 * before the save's answer comes from the one the slot left. The instance is then cut off (what it sends is lost)
 * until well past the quarantine that the renewal's answer began. The save's answer tells nothing newer than the
 * renewal's did: taken for a move back, the first answer after the outage would start a second quarantine, and the
 * instance would refuse the current token for longer than a lease after it could renew.
 */
function lateAnswerAfterMove(rng: Prng, { instances, replicas }: Shape): Fault[] {
  if (instances < 2 || replicas < 1) return [];
  // Not instance 0, which mostly creates the secret (its open() then waits for a lease).
  const rotating = rng.int(1, instances - 1);
  const rotateAt = rng.int(120, 250);
  // Held long enough for its answer to come past the command timeout (100 ms after it was sent), not so long that it
  // comes past the save's own (the command timeout and the replicas' timeout, 60 ms), nor the held renewal's.
  const hold = rng.int(45, 85);
  const savedAt = rotateAt + hold;
  const faults: Fault[] = [
    { at: rotateAt - 0.5, kind: 'partition', instance: rotating, length: hold + 0.5, drop: false, way: 'out' },
    { at: rotateAt, kind: 'rotate', instance: rotating },
  ];
  for (let index = 0; index < 4; index += 1)
    faults.push({ at: savedAt - rng.int(5, 20), kind: 'replica-lag', length: rng.int(200, 400) });
  // After the save ran, before the next renewal (57 ms after it on the fast clock).
  const moveAt = savedAt + rng.int(3, 50);
  // Once that renewal is sent, before the one after it.
  const cutAt = savedAt + 58.5 + rng.float() * 2.5;
  // Past the first quarantine, and early enough for a second one to outlast the bound before the schedule ends.
  const healAt = rng.int(savedAt + 420, FAULTS_END);
  faults.push(
    { at: moveAt, kind: 'slot-move' },
    { at: cutAt, kind: 'partition', instance: rotating, length: healAt - cutAt, drop: true, way: 'out' },
  );
  return faults;
}

/**
 * A split brain without `replicas` whose promoted side lacks the record, with one instance alone on that side: it
 * writes its record back there while its trust lasts, and a rotation on the deposed side resolves within its
 * quarantine. The instance's own rotation, sent to the primary just before the failover and held on its way, lands
 * after the deposed side's save (its conflict shows the instance the newer record); frozen meanwhile, the instance
 * sends nothing else to the deposed primary. The promoted replica restarts empty as it takes over, so the instance's
 * next renewal finds it without the record. The rotation waits for the instance's entry on the deposed primary and
 * resolves at its bound (docs/several-instances.md, "A network split"), once the world's exception for an instance
 * served by a deposed primary is over: the instance's renewals on its own write-back must not have ended its
 * quarantine by then. It crashes before the quarantine ends: past it, the promoted side accepts the revoked token,
 * the documented limit of a split without `replicas`.
 *
 * Not `empty`: the promoted replica keeps the record it replicated, the one the instance trusts. The instance saw a
 * newer one in its save's conflict: the record it reads there is Redis going back, never trusted again (without the
 * quarantine a new server starts, it would accept the revoked token as soon as the rotation resolves).
 */
function splitWriteBack(rng: Prng, { instances, replicas }: Shape, empty = true): Fault[] {
  if (instances < 2 || replicas < 1) return [];
  // Not instance 0, which mostly creates the secret (its open() then waits for a lease).
  const alone = rng.int(1, instances - 1);
  const rotating = (alone + rng.int(1, instances - 1)) % instances;
  // Every other process stays with the deposed primary, those that other scenarios start (after the plan's slots) too.
  const others = Array.from({ length: instances + 8 }, (_, index) => index).filter((index) => index !== alone);
  // Once every instance has opened.
  const rotateAt = rng.int(380, 420);
  const failoverAt = rotateAt + rng.int(1, 3);
  const emptyAt = failoverAt + rng.int(1, 5);
  // The sentinels tell each client within 40 ms of the failover: frozen until then, the instance sends nothing to the
  // deposed primary but its save.
  const resume = failoverAt + rng.int(41, 44);
  // Late enough for the rotation to resolve after the world's exception for an instance served by a deposed primary
  // (a lease after it was last routed there, 318 ms at the plans' spread) is over.
  const deposedAt = failoverAt + rng.int(40, 55);
  // After the deposed side's save, and within a command timeout of being sent (on the instance's slow clock).
  const land = rotateAt + rng.int(85, 95);
  // The rotation resolves at its bound, a lease and the drift margin after its save (320 ms on its fast clock); the
  // split heals after it.
  const heal = deposedAt + rng.int(345, 370);
  // Mostly after it resolved, always before the quarantine that began as the save landed ends (as long on the slow
  // clock: 340 ms).
  const crashAt = rng.int(deposedAt + 328, land + 334);
  return [
    { at: rotateAt - 0.2, kind: 'partition', instance: alone, length: land - rotateAt + 0.2, drop: false, way: 'out' },
    { at: rotateAt, kind: 'rotate', instance: alone },
    { at: rotateAt + 0.2, kind: 'pause', instance: alone, length: resume - rotateAt - 0.2 },
    { at: failoverAt, kind: 'failover', split: heal - failoverAt, side: others },
    ...(empty ? [{ at: emptyAt, kind: 'restart-empty' } as const] : []),
    { at: deposedAt, kind: 'rotate', instance: rotating },
    { at: crashAt, kind: 'crash', instance: alone, length: FAULTS_END - crashAt },
  ];
}

/**
 * The world of {@link splitWriteBack}: without `replicas` (with them, the rotation on the deposed side would not
 * resolve), Redis on loopback; the instance alone on the promoted side runs slow and the rotating one fast, within
 * the plans' spread: the rotation resolves at least 20 ms before that instance's quarantine ends.
 */
function splitSettings(faults: readonly Fault[]): Settings {
  const alone = faults.find((fault) => fault.kind === 'crash');
  const rates: Record<number, number> = {};
  for (const fault of faults)
    if (fault.kind === 'rotate')
      rates[fault.instance] = fault.instance === alone?.instance ? 1 - RATE_SPREAD : 1 + RATE_SPREAD;
  return { waitFor: 0, clocks: { spread: RATE_SPREAD, rates }, local: true };
}

/**
 * A split brain without `replicas` whose promoted replica keeps the record the instance alone there trusts. That
 * instance's rotation, held on its way to the primary (a partition that holds what it sends), is followed by the
 * failover and then by a rotation on the deposed side; it is frozen meanwhile, and renews the moment it resumes, on
 * the promoted replica (the sentinels told its client while it was frozen), a renewal held behind its save. Both land
 * together: the save conflicts with the deposed side's record, the renewal finds the record it trusts. Taken in
 * first, the renewal renews that trust on the promoted replica (the very record), where the deposed side's rotation
 * never looks: it resolves at its bound, a few milliseconds before that trust would end, and after the world's
 * exception for an instance served by a deposed primary (a lease after it was last routed there).
 */
function splitConflictLate(rng: Prng, { instances, replicas }: Shape): Fault[] {
  if (instances < 2 || replicas < 1) return [];
  const alone = rng.int(1, instances - 1);
  const rotating = (alone + rng.int(1, instances - 1)) % instances;
  const others = Array.from({ length: instances + 8 }, (_, index) => index).filter((index) => index !== alone);
  const rotateAt = rng.int(380, 420);
  const failoverAt = rotateAt + rng.int(1, 3);
  // After every client of the deposed side was told (within 40 ms), so that the rotation resolves after the world's
  // exception for the instance alone, which was routed there until it was told.
  const deposedAt = failoverAt + rng.int(40, 44);
  // The renewal at resuming is sent late enough for its trust (a lease less the drift margin on the slow clock, 278
  // ms) to outlast the rotation's bound (a lease and the drift margin on the fast clock, 320 ms after its save).
  const resume = deposedAt + rng.int(45, 48);
  // Within a command timeout of the save being sent (103 ms on the slow clock): its conflict is taken in.
  const land = Math.min(resume + rng.int(2, 6), rotateAt + 100);
  const heal = deposedAt + rng.int(345, 370);
  return [
    { at: rotateAt - 0.2, kind: 'partition', instance: alone, length: land - rotateAt + 0.2, drop: false, way: 'out' },
    { at: rotateAt, kind: 'rotate', instance: alone },
    { at: rotateAt + 0.2, kind: 'pause', instance: alone, length: resume - rotateAt - 0.2 },
    { at: failoverAt, kind: 'failover', split: heal - failoverAt, side: others },
    { at: deposedAt, kind: 'rotate', instance: rotating },
  ];
}

/** The world of {@link splitConflictLate}: as {@link splitSettings}, the instance alone there the paused one. */
function splitConflictLateSettings(faults: readonly Fault[]): Settings {
  const alone = faults.find((fault) => fault.kind === 'pause');
  const rates: Record<number, number> = {};
  for (const fault of faults)
    if (fault.kind === 'rotate')
      rates[fault.instance] = fault.instance === alone?.instance ? 1 - RATE_SPREAD : 1 + RATE_SPREAD;
  return { waitFor: 0, clocks: { spread: RATE_SPREAD, rates }, local: true };
}

/**
 * The instance table created under a rotation's acknowledgement read. Redis is stalled while the instances start, so
 * that every one reads no secret and all but one lose the race to create it (the rotating instance's read is held on
 * its way back until the creator's save has landed): they open without any renewal that Redis confirmed, and no table
 * stands. The rotating instance rotates; the others are cut off; Redis stalls again with the rotation's
 * acknowledgement read queued before the instance's next renewal, the one that creates the table. The instance freezes
 * as Redis wakes, with both answers on their way, and takes them in past its rotation's bound; answers that arrive
 * together are taken in either order. The read's answer, without the table, shows no lost table: taken for one, it
 * would start a quarantine, and the instance would refuse the current token for longer than a lease after it could
 * renew (on a clock at the slow end of the plans' spread, the quarantine lasts 340 ms).
 */
function noTableBeforeConfirmed(rng: Prng, { instances, replicas }: Shape): Fault[] {
  // With replicas but without WAIT (see the settings): an instance whose save lost the race reads the record again
  // only at its next renewal, so that no table stands before it.
  if (instances < 2 || replicas < 1) return [];
  // Not instance 0, whose read arrives first and which then mostly creates the secret.
  const rotating = rng.int(1, instances - 1);
  // Past the last instance's start (within 25 ms) and its read's arrival.
  const wakes = rng.int(28, 36);
  // Once the rotating instance has opened, and before its next renewal (about 60 ms after its first).
  const rotateAt = wakes + rng.int(36, 56);
  // Once the rotation's save has run, with its first reads on their way; until that renewal has arrived, within a
  // command timeout of the read that waits.
  const stallAt = rotateAt + rng.int(4, 7);
  const stallEnd = rotateAt + rng.int(66, 90);
  // Past the rotation's bound and a command timeout after it: the rotation gives up as the instance resumes.
  const thaw = rotateAt + rng.int(460, 800);
  const faults: Fault[] = [
    { at: 0, kind: 'stall', length: wakes },
    { at: 25.5, kind: 'partition', instance: rotating, length: wakes + 8 - 25.5, drop: false, way: 'in' },
    { at: rotateAt, kind: 'rotate', instance: rotating },
    { at: stallAt, kind: 'stall', length: stallEnd - stallAt },
    { at: stallEnd + 0.01, kind: 'pause', instance: rotating, length: thaw - stallEnd - 0.01 },
  ];
  // The others, who would read the new record and create the table first, are cut off until Redis wakes.
  for (let other = 0; other < instances; other += 1) {
    if (other === rotating) continue;
    const from = rotateAt - rng.int(1, 3);
    const length = stallEnd + rng.int(5, 20) - from;
    faults.push({ at: from, kind: 'partition', instance: other, length, drop: true, way: 'both' });
  }
  return faults;
}

/**
 * Clocks at the documented bound and Redis on loopback: each rotating instance's clock runs fast, and each paused
 * one's slow when `pausedSlow` (the others draw theirs within the wide spread).
 */
function atTheBound(faults: readonly Fault[], pausedSlow: boolean): Settings {
  const rates: Record<number, number> = {};
  for (const fault of faults) {
    if (fault.kind === 'pause' && pausedSlow) rates[fault.instance] = 1 - WIDE_SPREAD;
    if (fault.kind === 'rotate') rates[fault.instance] = 1 + WIDE_SPREAD;
  }
  return { clocks: { spread: WIDE_SPREAD, rates }, local: true };
}

/**
 * A rotation given up on (`saveTimeout` and its grace pass) while its instance still renews on the saved record: the
 * slot moves during its wait for acknowledgements, so that it waits out a quarantine after its bound, and is frozen
 * before that quarantine ends. Another instance rotates meanwhile; every other instance is frozen once it adopted
 * that record, and Redis restarts from a dump taken between the two saves. The rotating instance resumes first: the
 * new server's first answer holds its saved record, a quarantine to wait out. The others resume a moment later,
 * their trust long over, find Redis gone back and write the rollback marker: the rotating instance's renewals fail
 * (`stale`) through its quarantine, at the back-off's pace. The renewal its save makes at the quarantine's end keeps
 * that pace too.
 */
function quarantineBesideBackoff(rng: Prng, { instances }: Shape): Fault[] {
  if (instances < 2) return [];
  // Not instance 0, which mostly creates the secret (its open() then waits for a lease).
  const rotating = rng.int(1, instances - 1);
  const other = (rotating + rng.int(1, instances - 1)) % instances;
  // Early: the rotation waits for its bound (a lease and the drift margin after its save, 320 ms on its fast clock),
  // and is given up on at twice the saveTimeout (621 ms).
  const rotateAt = rng.int(25, 45);
  // Before the bound: the quarantine that the new server's first answer begins outlasts it.
  const move = rotateAt + rng.int(200, 280);
  // After the bound, within that quarantine.
  const frozenAt = rotateAt + rng.int(330, 400);
  // Off the dumps (one every 20 ms from 10 ms).
  const secondAt = frozenAt + rng.int(5, 30) + 0.5;
  const othersAt = secondAt + rng.int(10, 20);
  const restartAt = othersAt + rng.int(5, 60) + 0.5;
  // The last dump before the second save.
  const lastDump = 10 + 20 * Math.floor((restartAt - 10) / 20);
  const age = Math.floor((lastDump - secondAt) / 20) + 2;
  // Once Redis is back (a restart takes at most 30 ms) and the rotation was given up on; the others once their
  // trust is over (a lease after their last renewal), soon enough for the marker to come well within the quarantine.
  const resumes = Math.max(restartAt + 31, rotateAt + 640, othersAt + 250) + rng.int(0, 20);
  const othersResume = Math.max(resumes + rng.int(5, 90), othersAt + 310);
  const faults: Fault[] = [
    { at: rotateAt, kind: 'rotate', instance: rotating },
    { at: move, kind: 'slot-move' },
    { at: frozenAt, kind: 'pause', instance: rotating, length: resumes - frozenAt },
    { at: secondAt, kind: 'rotate', instance: other },
    { at: restartAt, kind: 'restart-dump', age },
  ];
  for (let index = 0; index < instances; index += 1) {
    if (index === rotating) continue;
    faults.push({ at: othersAt, kind: 'pause', instance: index, length: othersResume - othersAt });
  }
  return faults;
}

/**
 * The world of {@link quarantineBesideBackoff}: a `saveTimeout` just above the lease (as docs/several-instances.md
 * asks), no `WAIT`, and the rotating instance's clock 3 % fast.
 */
function besideBackoffSettings(faults: readonly Fault[]): Settings {
  const rates: Record<number, number> = {};
  for (const fault of faults) if (fault.kind === 'rotate') rates[fault.instance] = 1 + RATE_SPREAD;
  return { saveTimeout: TIMING.leaseMs + 20, waitFor: 0, clocks: { spread: RATE_SPREAD, rates } };
}

export const SCENARIOS: readonly Scenario[] = [
  {
    name: 'a renewal just before a rotation, on clocks at the documented bound',
    salt: 0x1d71,
    share: 0.08,
    faults: renewalJustBeforeRotation,
    settings: (faults) => atTheBound(faults, true),
  },
  { name: 'saved-at-before-send', salt: 0x5a7e5d, share: 0.08, faults: savedAtBeforeSend },
  { name: 'era-first-without-run-id', salt: 0x5a17e4, share: 0.05, faults: eraFirstWithoutRunId },
  // Without `replicas` (no WAIT): with it, the lagging former primary would leave the rotation uncertain.
  { name: 'failback', salt: 0xfa11bac, share: 0.04, faults: failback, settings: () => ({ waitFor: 0 }), alone: true },
  { name: 'lua-drop-ignores-seq', salt: 0xd205e9, share: 0.06, faults: luaDropIgnoresSeq },
  {
    name: 'acks-resolve-without-own-lease',
    salt: 0xac4501,
    share: 0.08,
    faults: acksResolveWithoutOwnLease,
    settings: (faults) => atTheBound(faults, false),
  },
  {
    name: 'read-time-before-answer',
    salt: 0x7ead7b,
    share: 0.05,
    faults: readTimeBeforeAnswer,
    // The rotating instance's clock fast, the joining one's (the slot after the plan's instances) slow.
    settings: (faults) => {
      const rotating = faults.find((fault) => fault.kind === 'rotate');
      const joined = faults.find((fault) => fault.kind === 'partition' && fault.way === 'both');
      const rates: Record<number, number> = {};
      if (rotating?.kind === 'rotate') rates[rotating.instance] = 1 + WIDE_SPREAD;
      if (joined?.kind === 'partition') rates[joined.instance] = 1 - WIDE_SPREAD;
      return { clocks: { spread: WIDE_SPREAD, rates }, local: true };
    },
    alone: true,
  },
  { name: 'rollback-same-generation', salt: 0x5a3e9e, share: 0.04, faults: rollbackSameGeneration },
  { name: 'healthy-rotation', salt: 0x4ea17, share: 0.03, faults: healthyRotation, alone: true },
  { name: 'gives-up-in-quarantine', salt: 0x9a4a27, share: 0.05, faults: givesUpInQuarantine, alone: true },
  { name: 'superseded-then-lost', salt: 0x5bc10f, share: 0.05, faults: supersededThenLost },
  {
    name: 'lease-ran-out-after-acks',
    salt: 0x1ea5e0,
    share: 0.04,
    faults: leaseRanOutAfterAcks,
    settings: (faults) => atTheBound(faults, false),
    alone: true,
  },
  // Clocks at the bound, the rotating instance's fast; WAIT for one replica, as `replicas: 1` does.
  {
    name: 'late-answer-after-move',
    salt: 0x1a7ea5,
    share: 0.04,
    faults: lateAnswerAfterMove,
    settings: (faults) => ({ ...atTheBound(faults, false), waitFor: 1 }),
    alone: true,
  },
  {
    name: 'split-write-back',
    salt: 0x5b11d5,
    share: 0.04,
    faults: splitWriteBack,
    settings: splitSettings,
    alone: true,
  },
  {
    name: 'split-conflict-seen',
    salt: 0xc0f1de,
    share: 0.04,
    faults: (rng, shape) => splitWriteBack(rng, shape, false),
    settings: splitSettings,
    alone: true,
  },
  {
    name: 'split-conflict-late',
    salt: 0xc0f1a7e,
    share: 0.035,
    faults: splitConflictLate,
    settings: splitConflictLateSettings,
    alone: true,
  },
  {
    name: 'quarantine-beside-backoff',
    salt: 0xbac0ff,
    share: 0.035,
    faults: quarantineBesideBackoff,
    settings: besideBackoffSettings,
    alone: true,
  },
  // Without WAIT (`replicas: false` on a deployment with replicas); the rotating instance's clock at the slow end.
  {
    name: 'no-table-before-confirmed',
    salt: 0x7ab1e0,
    share: 0.035,
    faults: noTableBeforeConfirmed,
    settings: (faults) => {
      const rotating = faults.find((fault) => fault.kind === 'rotate');
      const rates: Record<number, number> = {};
      if (rotating?.kind === 'rotate') rates[rotating.instance] = 1 - RATE_SPREAD;
      return { waitFor: 0, clocks: { spread: RATE_SPREAD, rates } };
    },
    alone: true,
  },
];

/** Whether the plan of `seed` draws a scenario whose faults replace the swarm's. */
export function scenarioAlone(seed: number): boolean {
  return SCENARIOS.some((scenario) => scenario.alone === true && new Prng(seed ^ scenario.salt).chance(scenario.share));
}

/** The faults of every scenario that the plan of `seed` draws. */
export function scenarioFaults(seed: number, shape: Shape): Fault[] {
  const faults: Fault[] = [];
  for (const scenario of SCENARIOS) {
    const rng = new Prng(seed ^ scenario.salt);
    if (rng.chance(scenario.share)) faults.push(...scenario.faults(rng, shape));
  }
  return faults;
}

/** The settings of the scenarios that the plan of `seed` draws (the later ones win). */
export function scenarioSettings(seed: number, shape: Shape): Settings {
  let settings: Settings = {};
  for (const scenario of SCENARIOS) {
    const rng = new Prng(seed ^ scenario.salt);
    if (scenario.settings !== undefined && rng.chance(scenario.share))
      settings = { ...settings, ...scenario.settings(scenario.faults(rng, shape)) };
  }
  return settings;
}
