// Plausible bugs of the Redis protocol, one small edit each: `npm run mutants` applies them one at a time and the
// simulator must catch every one (or the report says why it cannot: an equivalent change, or a gap in the world).
// Each `find` is a literal text that occurs exactly once in its file; test/sim/mutants.test.ts checks it.

export interface Mutant {
  /** Short and stable: `npm run mutants -- --only <id>`. */
  readonly id: string;
  /** The file changed, from the repository's root. */
  readonly file: string;
  readonly find: string;
  readonly replace: string;
  /** The bug, as a reviewer would describe it. */
  readonly what: string;
  /**
   * Printed in the report only if the simulator misses it: why the change is equivalent, or which fault or
   * invariant of the world would catch it.
   */
  readonly ifSurvives?: string;
  /**
   * A test that catches the mutant where the simulator cannot (a second layer, or what the simulated world does not
   * show): `npm run mutants` runs it on the mutated tree, where it must fail. `why` says why the code stays.
   */
  readonly test?: { readonly file: string; readonly name: string; readonly why: string };
}

const LEASE = 'packages/redis/src/lease.ts';
const HISTORY = 'packages/redis/src/history.ts';
const LINE = 'packages/redis/src/line.ts';
const ACKS = 'packages/redis/src/acks.ts';
const ERA = 'packages/redis/src/era.ts';
const STORE = 'packages/redis/src/store.ts';
const REPLICAS = 'packages/redis/src/replicas.ts';
const FOLLOWER = 'packages/redis/src/follower.ts';
const ACK_READER = 'packages/redis/src/ack-reader.ts';
const SCRIPTS = 'packages/redis/src/scripts.ts';
const ROTATION = 'src/authority/rotation.ts';

/** The save's call in store.ts, from the declaration of its result to the end of its error handling. */
const SAVE_CALL = `      let result: RunResult;
      try {
        result = await this.#runFull(
          SAVE,
          [this.#names.record, this.#names.instances],
          saveArgs(this.#names, this.#instanceId, expected, expectedId, value),
          'save the secret',
          true,
        );
      } catch (error) {
        // Sent and not answered: Redis may still run it. The follower adopts whatever Redis finally holds.
        if (error instanceof LauncherAuthError && error.code === 'ERR_STORE_UNAVAILABLE') {
          throw uncertainError(this.key, 'Redis did not answer the save in time');
        }
        throw error;
      }
`;

export const MUTANTS: readonly Mutant[] = [
  // --- the pure layer: lease.ts, history.ts, line.ts ---
  {
    id: 'other-line-taken-as-newer',
    file: LINE,
    find: '  return !line.ids.some(({ id }) => id === newest.id);',
    replace: '  return false;',
    what: 'A record of another line with a higher generation is taken for newer (the other side of a split brain, which rotated more often).',
  },
  {
    id: 'write-forward-drops-own-line',
    file: HISTORY,
    find: '    return { ...line, ids: line.ids.filter((seen) => seen.id !== id) };',
    replace: '    return lineOver(over.filter(({ seen }) => seen.id !== id));',
    what: "A record written forward loses its own line: it names only the record it went over, so an instance that holds one of the records it superseded takes it for another line's.",
  },
  {
    id: 'lease-ignores-drift',
    file: LEASE,
    find: 'return sentAt + this.options.leaseMs - this.options.driftMargin;',
    replace: 'return sentAt + this.options.leaseMs;',
    what: 'Trust lasts the whole lease, with no margin for clocks that run at different rates.',
  },
  {
    id: 'lease-adds-drift',
    file: LEASE,
    find: 'return sentAt + this.options.leaseMs - this.options.driftMargin;',
    replace: 'return sentAt + this.options.leaseMs + this.options.driftMargin;',
    what: 'The drift margin added to the trust instead of taken off it.',
  },
  {
    id: 'rollback-same-generation',
    file: LINE,
    find: '  return generation <= newest.generation || otherLine(newest, line);\n}',
    replace: '  return generation < newest.generation || otherLine(newest, line);\n}',
    what: 'A rollback check that accepts another record of the same generation as the newest seen.',
  },
  {
    id: 'no-backoff',
    file: LEASE,
    find: 'if (this.#failures <= 1 || now < this.#trustUntil) return renewInterval;',
    replace: 'if (this.#failures >= 1 || now < this.#trustUntil) return renewInterval;',
    what: 'No back-off: renewals that keep failing go on at the normal rate.',
    ifSurvives:
      'A gap: only a liveness invariant that counts the commands each instance sends to an unavailable Redis ' +
      '(at most about one per second once its trust is gone) can see it; safety is unchanged.',
  },
  {
    id: 'write-forward-after-trust',
    file: LEASE,
    find: 'if (canWriteForward && ownLine && heldId === this.#history.newest.id && now < this.#trustUntil) {',
    replace: 'if (canWriteForward && ownLine && heldId === this.#history.newest.id) {',
    what: 'After a rollback, the held record is written forward even once its trust has run out.',
  },
  {
    id: 'write-forward-when-behind',
    file: LEASE,
    find: 'if (canWriteForward && ownLine && heldId === this.#history.newest.id && now < this.#trustUntil) {',
    replace: 'if (canWriteForward && ownLine && now < this.#trustUntil) {',
    what: 'After a rollback, an instance writes forward the key it holds even when it has seen a newer record.',
  },
  {
    id: 'write-forward-other-line',
    file: LEASE,
    find: 'const ownLine = reply.id === null || this.#history.ownLine(reply.id);',
    replace: 'const ownLine = true;',
    what: "After a rollback, the held record is written forward over another line's record too (a split brain's other side).",
  },
  {
    id: 'quarantine-keeps-no-lease',
    file: LEASE,
    find: '      this.#failures = 0;\n      this.#leaseUntil = this.#leaseEnd(sentAt);\n      return {};\n',
    replace: '      this.#failures = 0;\n      return {};\n',
    what: 'Renewals answered during a quarantine keep no lease: a rotation across a change of server cannot resolve on its own lease.',
  },
  {
    id: 'resolves-in-quarantine',
    file: FOLLOWER,
    find: '      await this.#sleep(this.#era.quarantineUntil - this.#runtime.now());\n',
    replace: '',
    what: "A rotation across a change of server renews through its instance's quarantine instead of sleeping until it ends.",
    ifSurvives:
      "Equivalent: renewUntilLeased() returns only once a renewal left a lease and mayTrust(now) holds, or at its limit (two quarantines) outside any quarantine, so without the sleep the rotation still resolves only after its instance's quarantine, at the first renewal answered once it ended: at most one renewal delay later than with it, never inside it, and nothing is trusted earlier. Its renewals meanwhile take the place of the background ones (#renewNext() cancels their timer), at the same pace. The docs promise that a rotation waits out the quarantine (docs/several-instances.md), not how soon after it the rotation resolves. Before the limit also waited for the quarantine to end, this mutant resolved inside a third quarantine after three slot moves: gives-up-in-quarantine is that bug.",
    test: {
      file: 'packages/redis/test/follower.test.ts',
      name: 'resolve at the first renewal answered once its quarantine ended',
      why: '**KEPT: not equivalent in how soon a rotation resolves.** Without the sleep, renewUntilLeased() renews through the quarantine at the usual pace and still never resolves inside it (it returns only once a renewal left a lease and mayTrust holds), but it resolves at the first of those renewals answered after the quarantine: up to renewInterval later than the renewal sent as the quarantine ends. The simulator checks that a rotation waits out the quarantine, not how soon after it the rotation resolves.',
    },
  },
  {
    id: 'gives-up-in-quarantine',
    file: FOLLOWER,
    find: '      if (renewals > 0 && now >= until && this.#era.mayTrust(now)) break;\n',
    replace: '      if (renewals > 0 && now >= until) break;\n',
    what: 'A rotation across changes of server stops waiting at its limit (two quarantines) even inside a quarantine, and resolves there.',
  },
  {
    id: 'resolves-after-lease-ran-out',
    file: FOLLOWER,
    find: '    return this.#lease.leaseUntil > this.#runtime.now();\n',
    replace: '    return true;\n',
    what: "A rotation whose renewals on its record gave up resolves though its instance's lease ran out meanwhile.",
  },
  {
    id: 'renews-beside-timer',
    file: FOLLOWER,
    find:
      '      if (this.#renewing !== undefined && this.#sentAt >= started) await this.#renewing.catch(() => undefined);\n' +
      '      else await this.#renewNext();\n',
    replace: '      await this.#renewNext();\n',
    what:
      "A rotation's renewals on its record run beside the timer's instead of in their place: one goes out the moment " +
      'the other fails, not at the back-off.',
  },
  {
    id: 'quarantine-wakes-beside-backoff',
    file: FOLLOWER,
    find: 'if (this.#outcomeAt >= started && this.#renewing === undefined && delay > this.#lease.options.renewInterval)',
    replace: 'if (this.#outcomeAt < -Infinity)',
    what:
      "A rotation's renewal at the end of its quarantine goes out the moment the quarantine ends, even when the " +
      "back-off after the last failed renewal (the timer's) has not run out.",
  },
  {
    id: 'late-ok-trusts',
    file: LEASE,
    find: "      if (reply.status === 'ok') this.#era.confirmed(seq);\n      return {};\n    }\n    if (\n",
    replace: "      if (reply.status === 'ok') this.#era.confirmed(seq);\n    }\n    if (\n",
    what: 'A renewal answered before a newer record was written, taken in after it, still grants trust.',
    ifSurvives:
      "Equivalent for safety: the renewal ran before the newer record was written, so its lease is one that the newer rotation's bound (its answer + leaseMs + driftMargin) already waits for, and the instance acknowledges the newer record only once its authority holds it.",
    test: {
      file: 'packages/redis/test/lease.test.ts',
      name: 'Lease: renewal answers taken after a newer record',
      why: "**KEPT: not equivalent**, though safe. Deleting the late branch extends the trust in a key after this instance saw the record that replaced it, and lets a late stale answer count as a failure and ask for a reload: the lease's rule is that a late answer grants, asks and reports nothing. The simulator cannot see it: the trust it grants lies within the newer rotation's bound, which waits for that lease.",
    },
  },
  // --- the pure layer: era.ts ---
  {
    id: 'era-ignores-lost-renewals',
    file: ERA,
    find: 'const dropped = observed.ownSeq === 0 && observed.serverId === this.#serverId && observed.epoch === this.#epoch;',
    replace: 'const dropped = observed.serverId === this.#serverId && observed.epoch === this.#epoch;',
    what: "A table that lost this instance's renewals is taken for housekeeping (a dropped entry), not an era change, unless Redis restarted.",
    ifSurvives:
      "Equivalent: the server's identity is its run_id and its replication id (master_replid), and Redis loses writes only under a new one: a restart (a new run_id), a promotion (a failover, and a failback to a former primary that rejoined as a replica and lags: a new replication id), a slot move (another server). Under the same identity and the same table a primary keeps every write it answered, so an own renewal number below the highest confirmed shows only where answers are taken in out of order, which confirmedAtSend already tells apart; the mutant then decides as the code does. It would differ only where an operator rewrites the table on a running server (a FLUSHALL and a restore by hand), which no fault of Redis's own does.",
    test: {
      file: 'packages/redis/test/era.test.ts',
      name: "an entry removed by a rotation's housekeeping (same Redis, same table) is not a loss; an older renewal number is",
      why: "**SECOND LAYER** under the server's identity (era.ts says so): an entry there with an older renewal number on the same run_id, replication id and table is a loss the identity did not show (a server that kept both across a loss, an operator's restore on a running server). The simulated world loses writes only under a new identity, so the simulator cannot tell.",
    },
  },
  {
    id: 'era-first-without-run-id',
    file: ERA,
    find: 'const first = Number.isNaN(this.#since) || (this.#epoch === null && !lost && observed.serverId === this.#serverId);',
    replace: 'const first = Number.isNaN(this.#since) || (this.#epoch === null && !lost);',
    what: 'A table appearing where there was none starts the era without quarantine, even on another Redis.',
  },
  {
    id: 'era-quarantine-from-old-era',
    file: ERA,
    find: 'if (!first) this.#quarantineUntil = now + this.#wait;',
    replace: 'if (!first) this.#quarantineUntil = this.#since + this.#wait;',
    what: "The quarantine after a change of era measured from the previous era's start instead of the change.",
  },
  {
    id: 'era-same-strict-seq',
    file: ERA,
    find: '      observed.ownSeq >= this.#ownSeq\n',
    replace: '      observed.ownSeq > this.#ownSeq\n',
    what: 'Liveness: a table is the same era only if it shows a newer own renewal, so a rotation never resolves on acknowledgements.',
  },
  {
    id: 'era-no-table-before-confirmed',
    file: ERA,
    find: '    if (observed.epoch === null && observed.serverId === this.#serverId && confirmedAtSend === 0) return false;\n',
    replace: '',
    what:
      'Liveness: an answer without the instance table, to a read sent before Redis confirmed any renewal and taken ' +
      'in after the renewal that created the table, is taken for a lost table and starts a quarantine.',
  },
  {
    id: 'era-late-answer-moves-back',
    file: ERA,
    find: 'if (!present && sentAt < before && observed.serverId === serverId && observed.epoch === epoch) return false;',
    replace: '',
    what: 'Liveness: a late answer from the server this instance just left (a save held by its WAIT past a slot move) is taken for a move back, and the next answer of the new server starts a second quarantine.',
  },
  {
    id: 'write-back-ends-quarantine',
    file: LEASE,
    find: '      this.#era.keepQuarantine();\n',
    replace: '',
    what: 'An instance that found Redis without its record and wrote it back ends its quarantine at its next renewal there, taking its own write-back for a record the new server held.',
    ifSurvives:
      "Equivalent under the documented exception, since a record that a save's conflict shows is taken in as seen (conflict-not-seen): an instance writes its own record back on a server that lacks it only while that record is the newest it has seen, so a rotation on the other side of a split never reached it, and it is one of the instances on the promoted side that accept that side's revoked token (docs/several-instances.md, 'A network split'; at once when the promoted replica kept the record it trusts). Ending the quarantine at its own write-back makes it behave as when the promoted replica had kept that record. The write-back's quarantine is kept for what an instance cannot see: a rotation elsewhere whose record a later failover brings.",
    test: {
      file: 'packages/redis/test/lease.test.ts',
      name: 'quarantines for the whole lease on a server that lost the record, though it then holds the one written forward',
      why: "**KEPT: not equivalent**, though no invariant breaks. With the line deleted, seeds 1 to 3,000 run with 0 violations but 1,381 acceptances under the documented exception instead of 1,094: ending the quarantine at its own write-back lets the promoted side of a split accept that side's revoked token for longer, which the exception excuses and the invariants therefore do not count. It narrows the exception, so it stays.",
    },
  },
  {
    id: 'conflict-not-seen',
    file: HISTORY,
    find: "    const older = this.see(generation, id, prev, this.#newest, line) === 'rollback';\n",
    replace:
      '    const older = isRollback(this.#newest, generation, id, prev, line) || this.#revived(id, this.#newest);\n',
    what: "Another rotation's record that a save's conflict shows is forgotten: an older record read next, on another server, is trusted as the record the instance holds.",
  },
  {
    id: 'left-server-keeps-trust',
    file: LEASE,
    find: '    this.#trustUntil = -Infinity;\n    return true;\n',
    replace: '    return false;\n',
    what: "A record that replaced the held key, seen in a late answer from the server the instance left (a save held across a split brain's failover), leaves the trust that renewals on the other side granted standing.",
  },
  // --- the pure layer: acks.ts ---
  {
    id: 'acks-resolve-without-own-lease',
    file: ACKS,
    find: '    if (now < leaseUntil) {\n',
    replace: '    if (now < leaseUntil || now >= this.bound) {\n',
    what: 'A rotation resolves at its bound without checking that its own lease still lasts.',
    ifSurvives:
      "Equivalent since the store checks the lease again once the wait has resolved (store.ts, errors.ts unresolvedError): the rotation then renews on its record, a round trip sent after the wait's decision, and resolves only if that renewal found the record current and granted a lease that still lasts; otherwise it rejects (ERR_SAVE_UNCERTAIN, or superseded when the renewal showed a newer record). At the bound, every lease granted before the save has run out, so resolving there trusts no older key; the renewal is what proves the record still current. Two layers check the same lease; this mutant removes the first.",
    test: {
      file: 'packages/redis/test/acks.test.ts',
      name: 'never resolves once its own lease is over, before the bound or at it',
      why: "**SECOND LAYER** under the store's renewal before resolving (acks.ts says so): once the wait resolved, the store renews on the record and resolves only if that renewal found it current and left a lease, so the simulator, running both, cannot tell; the test runs the wait alone.",
    },
  },
  {
    id: 'acks-bound-without-drift',
    file: ACKS,
    find: 'this.bound = savedAt + options.leaseMs + options.driftMargin;',
    replace: 'this.bound = savedAt + options.leaseMs;',
    what: "The rotation's bound is one lease after the save, with no margin for clock drift.",
    ifSurvives:
      "Equivalent under the documented drift: the margin is counted twice, by the holder (trust ends driftMargin before its lease) and by the rotation (bound driftMargin after). The holder's trust comes from a renewal that ran before the save, so it ends 270 ms on its clock after a moment before the save's answer; the bound without the margin, 300 ms on the rotating instance's clock after that answer. With rates within 5 % of true time (any two differ by less than driftMargin over a lease, as the world's plans at WIDE_SPREAD draw them) the trust ends at most 270 / 0.95 = 284.2 ms later and the bound at least 300 / 1.05 = 285.7 ms later; a forward step of the rotating clock counts against the same bound (rates ±a leave a step of 30 − 600a ms: the bound ends (270 + 600a) / (1 + a) ≥ 270 / (1 − a) ms later for a ≤ 5 %). Only rates more than 11.1 % apart (300 / 270) would show it.",
    test: {
      file: 'packages/redis/test/acks.test.ts',
      name: 'outlasts the trust of a holder that keeps no margin of its own',
      why: "**SECOND LAYER** under the holder's margin (acks.ts says so): under the documented drift one margin is enough, and lease-ignores-drift, which removes the holder's, is caught. The bound's margin also covers an instance configured with driftMargin: 0 (the option's minimum) beside one that keeps the default; the simulator gives every instance the same options, so it cannot tell.",
    },
  },
  {
    id: 'acks-table-any-era',
    file: ACKS,
    find: 'return this.#era.same(reply) && now >= this.#era.completeFrom();',
    replace: 'return reply.epoch !== null && now >= this.#era.completeFrom();',
    what: 'The instance table is taken as complete when there is one, not only when Redis and the table are those of the era.',
    ifSurvives:
      "Equivalent: read() takes each answer into the era before it asks whether the table is complete, so a changed Redis or table starts a new era at that answer and completeFrom() moves a lease ahead; past it, the table is that era's. What same() adds over that: an own renewal number below the highest confirmed that observe() did not take for a loss (a read that ran before a renewal taken in first: the same table), and an own entry dropped by housekeeping, which happens only after this instance's lease ran out (its entry unchanged for leaseMs + driftMargin on another instance's clock), while a resolution needs that lease to last.",
    test: {
      file: 'packages/redis/test/acks.test.ts',
      name: 'is never taken as complete, even by an era that missed the change',
      why: "**SECOND LAYER** under the era's change (acks.ts says so): read() takes each answer into the era before it asks whether the table is complete, so a changed Redis or table starts a new era, complete only a lease later; same() refuses such a table by itself. The simulator, running both, cannot tell; the test gives the wait an era that misses every change.",
    },
  },
  {
    id: 'entries-dropped-early',
    file: ACKS,
    find: 'const stale = this.#options.leaseMs + this.#options.driftMargin;',
    replace: 'const stale = this.#options.leaseMs - this.#options.driftMargin;',
    what: "Entries dropped early: a silent instance's entry is removed a drift margin before its lease can end.",
    ifSurvives:
      "A gap: the entry goes leaseMs - driftMargin (270 ms) on the rotating instance's clock after the read that first showed it, and the rotation resolves on the read after that (an ackPollInterval later, at least 290 ms after the first read), while the silent instance's trust ends leaseMs - driftMargin on its own clock after it sent a renewal that ran before the save, hence before that first read. So the silent instance still trusts when the rotation resolves only if its clock runs about 7 % slower than the rotating instance's (270 against 290 ms), near the documented bound (10 % apart over a lease), with its last renewal just before the save. The world's rates stay within ±3 % and one step of at most 10 ms (a window of at most 6.6 ms less the time from that renewal to the first read), and no scenario can choose the rates; a plan whose processes run at the documented bound (±5 %, no step) with that renewal timing would catch it. Back-to-back rotations do not widen the window: a second rotation must be saved after the drop, and the first rotation's instance, still saving, does not acknowledge it.",
  },
  {
    id: 'acks-lost-as-superseded',
    file: ACKS,
    find: 'if (!isRollback(saved, reply.generation, reply.id, reply.prev, reply.line))',
    replace: 'if (reply.id !== null)',
    what: 'A rotation whose record Redis lost (it went back to an older one) is reported as superseded.',
    ifSurvives:
      "A gap: only the outcome's code changes (ERR_ROTATION_SUPERSEDED instead of ERR_SAVE_UNCERTAIN); the world's truth rule asks of a superseded rotation only that its record was stored. Asking also that a record descending from it replaced it would catch it.",
  },
  // --- the driver: store.ts ---
  {
    id: 'load-adopts-rollback',
    file: STORE,
    find: "      if (sighting === 'rollback') throw this.#reports.found(loaded ? 'rollback' : 'missing', this.#link !== undefined);\n      if (sighting === 'adopted') {",
    replace: "      if (sighting !== 'late') {",
    what: 'load() adopts a rolled-back record instead of refusing it.',
  },
  {
    id: 'wait-unknown-count-confirmed',
    file: REPLICAS,
    find: 'if ((result.replicas ?? -1) >= required) return;',
    replace: 'if ((result.replicas ?? required) >= required) return;',
    what: 'An unknown WAIT count taken as confirmed by every replica asked for.',
    ifSurvives:
      'A gap: the simulated connection always answers WAIT with a count. A fault where WAIT fails, or where a reconnection or failover comes between the script and its WAIT (the count is then unknown), would catch it.',
  },
  {
    id: 'write-forward-never-done',
    file: STORE,
    find: 'const record = held === undefined ? undefined : this.#records.get(held);',
    replace: 'const record = held === undefined ? undefined : this.#records.get(this.#savingId);',
    what: 'A write-forward never carried out: the record looked up is the one being saved (none, outside a save).',
  },
  {
    id: 'renew-held-unchecked',
    file: STORE,
    find: 'this.#renewHeld = heldId !== undefined && this.#history.mayRenewWhileSaving(heldId, over);',
    replace: 'this.#renewHeld = heldId !== undefined;',
    what: 'Renewals on the record being saved extend the trust in the held key even when a newer rotation overtook it.',
  },
  {
    id: 'lease-until-swapped',
    file: STORE,
    find: 'leaseUntil: () => (this.#link === undefined ? Infinity : this.#lease.leaseUntil),',
    replace: 'leaseUntil: () => (this.#link !== undefined ? Infinity : this.#lease.leaseUntil),',
    what: "The driver's rotation resolves without its own lease: the two cases of the watch swapped.",
  },
  {
    id: 'saved-at-before-send',
    file: STORE,
    find: `${SAVE_CALL}      const savedAt = this.#runtime.now();\n`,
    replace: `      const savedAt = this.#runtime.now();\n${SAVE_CALL}`,
    what: "The rotation's bound counted from when the save was sent, not from when its answer arrived.",
  },
  // --- the driver: follower.ts, ack-reader.ts ---
  {
    id: 'renewal-time-after-answer',
    file: FOLLOWER,
    find:
      '    const sentAt = this.#runtime.now();\n    this.#sentAt = sentAt;\n' +
      '    const reply = await this.#io.confirm(heldId, savingId, seq);\n',
    replace:
      '    this.#sentAt = this.#runtime.now();\n    const reply = await this.#io.confirm(heldId, savingId, seq);\n' +
      '    const sentAt = this.#runtime.now();\n',
    what: 'The renewal time read after the answer arrives, not before the renewal is sent.',
  },
  {
    id: 'held-from-lease',
    file: FOLLOWER,
    find: 'const heldId = this.#link.keyId;\n    const savingId',
    replace: 'const heldId = this.#history.newest.id;\n    const savingId',
    what:
      'CONFIRM acknowledges a record the authority does not hold: the renewal names the newest record the store ' +
      "has seen, not the authority's key.",
  },
  {
    id: 'drops-at-earliest',
    file: ACK_READER,
    find: 'const at = Math.max(...entries.map(([, , time]) => time));',
    replace: 'const at = Math.min(...entries.map(([, , time]) => time));',
    what: "Entries dropped early: the housekeeping after a resolved rotation drops every entry at the earliest one's time.",
    ifSurvives:
      'Equivalent: every entry that a read of the record waits on was last renewed before the save (after it, a renewal either acknowledges the record or is stale and leaves the entry as it was; only the saving instance renews on the record without acknowledging it, and PENDING leaves out its caller), so the lease behind it ends by the bound. Each drop time is leaseMs + driftMargin after a read answered after the save, so the earliest is past the bound as well, and DROP removes an entry only if it was not renewed since. Instances cut off at different times are first seen by the same read. An entry can first show later only when the table changed server (a failover to a replica that missed acknowledgements, a restore from a dump): its instance then trusts this record, not an older one, and the change of era keeps any later rotation from resolving on acknowledgements before the leases granted on the old server have ended.',
    test: {
      file: 'packages/redis/test/ack-reader.test.ts',
      name: 'removes the entries still waited on only once the latest of their leases may be over, not the earliest',
      why: "**SECOND LAYER** under DROP, which removes an entry only if it was not renewed since (ack-reader.ts says so): every drop time is past the rotation's bound, so the simulator cannot tell.",
    },
  },
  {
    id: 'read-time-before-answer',
    file: ACK_READER,
    find:
      '      let answer: unknown;\n      try {\n        answer = await this.#io.pending(wait.id);\n      } catch {\n' +
      '        answer = undefined;\n      }\n      const now = this.#runtime.now();\n',
    replace:
      '      let answer: unknown;\n      const now = this.#runtime.now();\n      try {\n' +
      '        answer = await this.#io.pending(wait.id);\n      } catch {\n        answer = undefined;\n      }\n',
    what: 'An acknowledgement read judged at the time it was sent, not when its answer arrived.',
  },
  {
    id: 'ack-answer-not-seen',
    file: ACK_READER,
    find: '        history.see(pending.generation, pending.id, pending.prev, sent, pending.line);\n',
    replace: '',
    what: "An acknowledgement read's record is not taken in as seen: a rotation that superseded the save is forgotten.",
  },
  // --- Redis's side: the Lua scripts ---
  {
    id: 'lua-pending-counts-caller',
    file: SCRIPTS,
    find: "if name ~= '@epoch' and name ~= ARGV[1] then",
    replace: "if name ~= '@epoch' then",
    what: 'PENDING counts the caller, which acknowledges its own record only after the rotation resolves (liveness).',
  },
  {
    id: 'lua-save-ignores-id',
    file: SCRIPTS,
    find: "if generation ~= tonumber(ARGV[1]) or id ~= ARGV[2] then return observed('conflict'",
    replace: "if generation ~= tonumber(ARGV[1]) then return observed('conflict'",
    what: "SAVE compares the generation only, not the record's id.",
    ifSurvives:
      "A gap: a record of the expected generation with another id is only there after a split brain or a rollback (a sibling of the expected record); the save then replaces a record its instance never saw, and the world's documented exception excuses what follows. An invariant that a save never replaces a record its instance did not hold as the highest seen (outside write-forwards) would catch it.",
  },
  {
    id: 'lua-drop-ignores-seq',
    file: SCRIPTS,
    find: "if entry and string.match(entry, '^(%d+):') == ARGV[2] then redis.call('HDEL', KEYS[1], ARGV[1]) end",
    replace: "if entry then redis.call('HDEL', KEYS[1], ARGV[1]) end",
    what: 'DROP ignores the renewal number: an entry renewed since it was seen silent is removed all the same.',
  },
  {
    id: 'lua-run-id-digits',
    file: SCRIPTS,
    find: "(string.match(info, 'run_id:(%w+)') or '')",
    replace: "(string.match(info, 'run_id:(%d+)') or '')",
    what: "Every answer reports a wrong run_id: its leading digits only ('' when it starts with a letter).",
    ifSurvives:
      "Equivalent: an answer names the server by its run_id and its replication id together, and wherever a primary's run_id changes, so does its replication id. A restart gives a primary a new replication id (Redis restores the one in its RDB file only on a replica: server.c's loadDataFromDisk), a failover or a failback promotes another server or gives the promoted one a new one, and a slot move reaches another primary. So the identity still changes exactly when it did; only the identity of a replica restarted with its replication id differs, and no script writes there.",
    test: {
      file: 'packages/redis/test/sim/keyspace.test.ts',
      name: 'names a restarted server anew by its run_id, though it kept its replication id',
      why: "**KEPT: not equivalent on every Redis.** A restarted primary takes a new replication id only on versions that do not restore it from the RDB file for a primary (Redis 4.0's loadDataFromDisk restored it whatever the role); the run_id is new at every start. The simulated world's restart always draws a new replication id, so the simulator cannot tell; scripts.ts names why.",
    },
  },
  {
    id: 'lua-identity-without-replid',
    file: SCRIPTS,
    find: " .. ':' .. (string.match(replication, 'master_replid:(%w+)') or '')",
    replace: '',
    what: 'Every answer names the server by its run_id alone: a failback to a former primary that lags is taken for the same server.',
  },
  {
    id: 'lua-confirm-acks-saving',
    file: SCRIPTS,
    find: '  if value.id ~= ARGV[2] then acked = before end\n',
    replace: '',
    what: "CONFIRM acknowledges the record being saved, which the instance's authority does not hold yet.",
    ifSurvives:
      'Equivalent: only the instance saving a record renews on it, and PENDING, which alone reads the ' +
      "acknowledgements, never counts its caller; the rotating instance's own entry is the one that changes.",
    test: {
      file: 'packages/redis/test/sim/simulation.test.ts',
      name: 'situations kept as schedules',
      why: "**KEPT: not equivalent in what Redis announces.** Without the line, the saving instance's first renewal on its record acknowledges it and announces that on `key:acked`, which wakes its own wait for a read that counts nothing (PENDING leaves out its caller): one more message and one more read per rotation. No invariant breaks, but the extra message moves every later event, and 8 of the kept schedules no longer reach the situation each keeps. The line is what keeps a rotating instance quiet about its own record.",
    },
  },
  {
    id: 'lua-save-observes-old',
    file: SCRIPTS,
    find: "return observed('ok', saved, KEYS[2], ARGV[4])",
    replace: "return observed('ok', value, KEYS[2], ARGV[4])",
    what: "SAVE's answer observes the record it replaced instead of the one it wrote.",
  },
  // --- the authority's rotations ---
  {
    id: 'overtaken-never-marked',
    file: ROTATION,
    find: 'for (const entry of this.#abandoned) entry.overtaken ||= entry.id !== record.id;',
    replace: 'for (const entry of this.#abandoned) entry.overtaken ||= entry.id === record.id;',
    what: 'A save given up on that lands after another key became current is adopted, not written over.',
    ifSurvives:
      "Equivalent for the Redis store, which the simulator runs: SAVE is a compare-and-set, so a save given up on lands only over the record the store held as the highest when it was sent (E), and the record it writes is then newer than E on the store's line. If the key that became current since is E (the authority had fallen behind), the write-back of E over the landed record is refused by the store itself (a record its line replaced is never saved again, ERR_SAVE_CONFLICT) and the authority adopts the landed record: the mutant adopts the same record at once, without the ERR_SAVE_CONFLICT report. Any other current key was read from Redis while it held something other than E, so the save lands only after Redis went back to E, and load() refuses the landed record as a rollback of the store's line (or the marker replaces it). (The kept schedule that showed this path relied on the simulated Redis letting a read overtake an earlier save on the same connection, which a real server never does; with commands kept in order, no plan tried reaches it.) test/hardening/store-faults.test.ts ('the queue moves on during the hang') catches it with a store that has no compare-and-set.",
    test: {
      file: 'test/hardening/store-faults.test.ts',
      name: 'the queue moves on during the hang',
      why: "**KEPT**: the core's rule for every store, not the Redis store's. For the Redis store, which the simulator runs, it is equivalent (SAVE is a compare-and-set: see the argument in test/sim/mutant-list.ts); a store without compare-and-set has no such guard.",
    },
  },
  {
    id: 'uncertain-resolves',
    file: ROTATION,
    find: '      this.#abandon(record.id, undefined);\n      throw new LauncherAuthError(code, MESSAGES[code], { cause });\n',
    replace: '      return this.#install(next, record);\n',
    what: 'A store that cannot tell whether its save took effect is taken at its word that it did: rotate() resolves.',
  },
];
