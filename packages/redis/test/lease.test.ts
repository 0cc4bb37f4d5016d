// The instance's side of the Redis protocol (lease.ts, over history.ts and era.ts), event by event: which renewal and
// read answers are rollbacks. Answers that arrive together are not always taken in the order Redis sent them, so a
// renewal's or a read's answer may be taken after a record that Redis wrote later (the instance's own save, a
// write-forward, another answer).
import { describe, expect, it } from 'vitest';
import type { ConfirmReply, Lease } from '../src/lease.js';
import { instance, type Instance } from './instance.js';

const OPTIONS = { leaseMs: 1000, renewInterval: 200, driftMargin: 100 } as const;

function answer(
  seq: number,
  generation: number,
  id: string | null,
  prev: string,
  status: 'ok' | 'stale' = 'ok',
): ConfirmReply {
  return { status, generation, id, prev, serverId: 'run', epoch: 'epoch', ownSeq: seq };
}

/** An instance that holds generation 1 ('a') and has had it confirmed once. */
function holdingFirst(): Instance {
  const held = instance(OPTIONS);
  const { lease, history } = held;
  expect(history.see(1, 'a', '')).toBe('adopted');
  const seq = lease.nextSeq();
  expect(
    lease.renewed(answer(seq, 1, 'a', ''), { seq, sentAt: 0, now: 1, heldId: 'a', canWriteForward: true }),
  ).toMatchObject({ trustUntil: 900 });
  return held;
}

describe('Lease: renewal answers taken after a newer record', () => {
  it("a renewal run before the instance's own save, taken after the save's answer, is not a rollback", () => {
    const { lease, history } = holdingFirst();
    const seq = lease.nextSeq();
    // The save of generation 2 was sent after the renewal; its answer is taken first.
    history.wrote(2, 'b');
    expect(
      lease.renewed(answer(seq, 1, 'a', ''), { seq, sentAt: 10, now: 11, heldId: 'a', canWriteForward: true }),
    ).toEqual({});
    expect(lease.condition).toBe('ok');
    expect(history.newest).toEqual({ generation: 2, id: 'b' });
  });

  it("a renewal run before another instance's rotation, taken after the reload that read it, is not a rollback", () => {
    const { lease, history } = holdingFirst();
    const seq = lease.nextSeq();
    expect(history.see(2, 'b', 'a')).toBe('adopted');
    for (const status of ['ok', 'stale'] as const) {
      // Neither a rollback nor a trust in the key it held: the next renewal speaks for the present.
      expect(
        lease.renewed(answer(seq, 1, 'a', '', status), {
          seq,
          sentAt: 10,
          now: 11,
          heldId: 'a',
          canWriteForward: true,
        }),
      ).toEqual({});
    }
    expect(lease.condition).toBe('ok');
    const next = lease.nextSeq();
    expect(
      lease.renewed(answer(next, 2, 'b', 'a'), { seq: next, sentAt: 20, now: 21, heldId: 'b', canWriteForward: true }),
    ).toEqual({ trustUntil: 920 });
  });

  it('the next renewal still catches Redis holding the older record', () => {
    const { lease, history } = holdingFirst();
    const seq = lease.nextSeq();
    history.wrote(2, 'b');
    expect(
      lease.renewed(answer(seq, 1, 'a', ''), { seq, sentAt: 10, now: 11, heldId: 'a', canWriteForward: true }),
    ).toEqual({});
    const next = lease.nextSeq();
    expect(
      lease.renewed(answer(next, 1, 'a', '', 'stale'), {
        seq: next,
        sentAt: 20,
        now: 21,
        heldId: 'b',
        canWriteForward: true,
      }),
    ).toEqual({
      writeForward: { expected: 1, expectedId: 'a', generation: 3, line: expect.anything() },
      report: 'rollback',
    });
  });
});

describe('Lease: rollbacks seen by a renewal sent after the newer record', () => {
  it('an older generation', () => {
    const { lease, history } = holdingFirst();
    history.wrote(2, 'b');
    const seq = lease.nextSeq();
    expect(
      lease.renewed(answer(seq, 1, 'a', ''), { seq, sentAt: 10, now: 11, heldId: 'a', canWriteForward: true }),
    ).toEqual({
      marker: { expected: 1, expectedId: 'a', generation: 3, line: expect.anything() },
      report: 'rollback',
    });
  });

  it('another record of the same generation', () => {
    const { lease, history } = holdingFirst();
    expect(history.see(2, 'b', 'a')).toBe('adopted');
    const seq = lease.nextSeq();
    expect(
      lease.renewed(answer(seq, 2, 'c', 'x', 'stale'), {
        seq,
        sentAt: 10,
        now: 11,
        heldId: 'a',
        canWriteForward: true,
      }),
    ).toEqual({
      marker: { expected: 2, expectedId: 'c', generation: 3, line: expect.anything() },
      report: 'rollback',
    });
  });

  it("writes forward over a record of its own line while its trust lasts, never over another line's", () => {
    // Holding 'b' (generation 2, which replaced 'a'), trusted until 920.
    const holdingSecond = (): Lease => {
      const { lease, history } = holdingFirst();
      expect(history.see(2, 'b', 'a')).toBe('adopted');
      const seq = lease.nextSeq();
      lease.renewed(answer(seq, 2, 'b', 'a'), { seq, sentAt: 20, now: 21, heldId: 'b', canWriteForward: true });
      return lease;
    };
    const renewal = (lease: Lease, reply: ConfirmReply): unknown => {
      const seq = lease.nextSeq();
      return lease.renewed({ ...reply, ownSeq: seq }, { seq, sentAt: 30, now: 31, heldId: 'b', canWriteForward: true });
    };
    // Redis went back to 'a', which 'b' replaced: no rotation replaced it there since.
    expect(renewal(holdingSecond(), answer(0, 1, 'a', '', 'stale'))).toEqual({
      writeForward: { expected: 1, expectedId: 'a', generation: 3, line: expect.anything() },
      report: 'rollback',
    });
    // 'a' again at a higher generation: written forward by an instance that never saw 'b'. Still older than 'b'.
    expect(renewal(holdingSecond(), answer(0, 3, 'a', '', 'stale'))).toEqual({
      writeForward: { expected: 3, expectedId: 'a', generation: 4, line: expect.anything() },
      report: 'rollback',
    });
    // 'c', another rotation from 'a' (the other side of a split brain): it may have resolved, and revoked 'b'.
    expect(renewal(holdingSecond(), answer(0, 2, 'c', 'a', 'stale'))).toEqual({
      marker: { expected: 2, expectedId: 'c', generation: 3, line: expect.anything() },
      report: 'rollback',
    });
    // An older generation this instance never saw: another line too.
    expect(renewal(holdingSecond(), answer(0, 1, 'z', '', 'stale'))).toEqual({
      marker: { expected: 1, expectedId: 'z', generation: 3, line: expect.anything() },
      report: 'rollback',
    });
  });

  it('a write-forward whose answer comes after a newer record was seen does not replace it as the highest', () => {
    // Holding 'b' (generation 2, over 'a'); Redis went back to 'a', and 'b' is written forward over it at 3. Before
    // the write's answer, a read that Redis ran before it went back shows 'c' (3), which replaced 'b'.
    const { lease, history } = holdingFirst();
    expect(history.see(2, 'b', 'a')).toBe('adopted');
    const seq = lease.nextSeq();
    lease.renewed(answer(seq, 2, 'b', 'a'), { seq, sentAt: 20, now: 21, heldId: 'b', canWriteForward: true });
    const next = lease.nextSeq();
    const step = lease.renewed(answer(next, 1, 'a', '', 'stale'), {
      seq: next,
      sentAt: 30,
      now: 31,
      heldId: 'b',
      canWriteForward: true,
    });
    expect(step.writeForward).toMatchObject({ expected: 1, expectedId: 'a', generation: 3 });
    expect(history.see(3, 'c', 'b', { generation: 2, id: 'b' })).toBe('adopted');
    history.wrote(3, 'b', step.writeForward?.line);
    // 'c' stays the highest: 'b' at 3 is a rollback to it, and 'c' never joins the records before it.
    expect(history.newest).toEqual({ generation: 3, id: 'c' });
    expect(history.replaced('c')).toBe(false);
    expect(history.replaced('b')).toBe(true);
  });

  it("its own save answered after its write-forward is newer all the same: the save's line names the held record", () => {
    // Holding 'a' (1), saving 'b' over it; Redis went back (empty) and 'a' was written forward at 2 before the save's
    // answer, which says 'b' landed at 2 first.
    const { history } = holdingFirst();
    history.wrote(2, 'a', history.lineFor({ generation: 0, id: '' }, 'a'));
    history.wrote(2, 'b', { floor: 0, ids: [{ id: 'a', generation: 1 }] });
    expect(history.newest).toEqual({ generation: 2, id: 'b' });
  });

  it('a missing record', () => {
    const { lease } = holdingFirst();
    const seq = lease.nextSeq();
    expect(
      lease.renewed(answer(seq, 0, null, '', 'stale'), {
        seq,
        sentAt: 10,
        now: 11,
        heldId: 'a',
        canWriteForward: true,
      }),
    ).toEqual({
      writeForward: { expected: 0, expectedId: '', generation: 2, line: expect.anything() },
      report: 'missing',
    });
  });

  it('an older record than the one held when the renewal was sent, even once a newer one was seen since', () => {
    const { lease, history } = holdingFirst();
    history.wrote(2, 'b');
    const seq = lease.nextSeq();
    history.wrote(3, 'c');
    expect(
      lease.renewed(answer(seq, 1, 'a', ''), { seq, sentAt: 10, now: 11, heldId: 'b', canWriteForward: true }),
    ).toMatchObject({ report: 'rollback' });
  });
});

describe('Lease: records read by load(), judged against the highest seen when the read was sent', () => {
  it("a read run before the instance's own save, taken after the save's answer, is late, not a rollback", () => {
    const { lease, history } = holdingFirst();
    const sent = history.newest;
    history.wrote(2, 'b');
    expect(history.see(1, 'a', '', sent)).toBe('late');
    expect(history.newest).toEqual({ generation: 2, id: 'b' });
    expect(lease.condition).toBe('ok');
  });

  it('a read run before a write-forward, taken after its answer, is late', () => {
    const { history } = holdingFirst();
    const sent = history.newest;
    // The write-forward replaced a missing record: generation 2, no predecessor.
    history.wrote(2, 'a');
    expect(history.see(1, 'a', '', sent)).toBe('late');
    expect(history.see(0, null, '', sent)).toBe('rollback');
  });

  it("a read run before another instance's rotation, taken after a renewal that saw it, is late", () => {
    const { lease, history } = holdingFirst();
    const sent = history.newest;
    const seq = lease.nextSeq();
    expect(
      lease.renewed(answer(seq, 2, 'b', 'a', 'stale'), {
        seq,
        sentAt: 10,
        now: 11,
        heldId: 'a',
        canWriteForward: true,
      }),
    ).toEqual({ reload: true });
    expect(history.see(1, 'a', '', sent)).toBe('late');
    // Read again: the newer record is adopted.
    expect(history.see(2, 'b', 'a', history.newest)).toBe('adopted');
  });

  it("nothing stored yet, read before the instance's first save and taken after it: late", () => {
    const { history } = instance(OPTIONS);
    const sent = history.newest;
    history.wrote(1, 'a');
    expect(history.see(0, null, '', sent)).toBe('late');
    expect(history.see(0, null, '')).toBe('rollback');
  });

  it('a read older than the record held when it was sent is a rollback, whatever was seen since', () => {
    const { history } = holdingFirst();
    history.wrote(2, 'b');
    const sent = history.newest;
    history.wrote(3, 'c');
    expect(history.see(1, 'a', '', sent)).toBe('rollback');
    expect(history.see(2, 'x', 'a', sent)).toBe('rollback');
    expect(history.see(0, null, '', sent)).toBe('rollback');
    expect(history.newest).toEqual({ generation: 3, id: 'c' });
  });

  it('a record saved over a rolled-back or missing one, whose line names the held record, is its successor whatever its generation', () => {
    // This instance wrote 'a' forward at generation 3; another, which had not seen that, rotated over a missing
    // record from 'a' at generation 2: the new record's generation is 3, its prev empty, its line names 'a'.
    for (const generation of [2, 3]) {
      const { lease, history } = holdingFirst();
      history.wrote(3, 'a', { floor: 0, ids: [] });
      expect(history.newest).toEqual({ generation: 3, id: 'a' });
      const seq = lease.nextSeq();
      const step = lease.renewed(
        { ...answer(seq, generation, 'b', '', 'stale'), line: { floor: 0, ids: [{ id: 'a', generation: 1 }] } },
        { seq, sentAt: 10, now: 11, heldId: 'a', canWriteForward: true },
      );
      expect(step).toEqual({ reload: true });
      expect(history.newest).toEqual({ generation, id: 'b' });
      // Redis then comes back empty: the record written back is the successor, never the record it replaced.
      const next = lease.nextSeq();
      expect(
        lease.renewed(answer(next, 0, null, '', 'stale'), {
          seq: next,
          sentAt: 20,
          now: 21,
          heldId: 'b',
          canWriteForward: true,
        }),
      ).toMatchObject({ writeForward: { expected: 0, expectedId: '', generation: generation + 1 } });
    }
  });

  it('a newer record, or a successor of the highest whatever its generation, is adopted', () => {
    const { history } = holdingFirst();
    const sent = history.newest;
    expect(history.see(3, 'c', 'b', sent)).toBe('adopted');
    expect(history.newest).toEqual({ generation: 3, id: 'c' });
    expect(history.see(2, 'd', 'c')).toBe('adopted');
    expect(history.newest).toEqual({ generation: 2, id: 'd' });
    expect(history.see(2, 'd', 'c')).toBe('adopted');
  });
});

describe('Lease: the pace of renewals', () => {
  it('renews at renewInterval while quarantined after a change of era: Redis answers, so nothing backs off', () => {
    const { lease, era } = holdingFirst();
    // Unanswered renewals while Redis restarts: the backoff grows once the trust is over.
    for (let index = 0; index < 4; index += 1) lease.unanswered();
    expect(lease.nextDelay(5000)).toBeGreaterThan(OPTIONS.renewInterval);
    // Redis is back as another server: the answers quarantine, and the renewals go on at the usual pace.
    const seq = lease.nextSeq();
    const restarted = { ...answer(seq, 1, 'a', ''), serverId: 'restarted' };
    expect(lease.renewed(restarted, { seq, sentAt: 5000, now: 5001, heldId: 'a', canWriteForward: true })).toEqual({});
    expect(era.mayTrust(5001)).toBe(false);
    expect(lease.nextDelay(5001)).toBe(OPTIONS.renewInterval);
  });

  it('backs off to a second at most, and to a quarter of the lease when that is shorter', () => {
    const { lease: short } = instance({ leaseMs: 300, renewInterval: 60, driftMargin: 30 });
    const { lease: long } = instance({ leaseMs: 20_000, renewInterval: 100, driftMargin: 500 });
    for (let index = 0; index < 12; index += 1) {
      short.unanswered();
      long.unanswered();
    }
    expect(short.nextDelay(0)).toBe(75);
    expect(long.nextDelay(0)).toBe(1000);
  });
});

describe('Lease: a save over a rollback, and the trust a resolved save grants', () => {
  it('saves over the record it expected written forward, a marker, or an older record; never over another rotation', () => {
    const { history } = holdingFirst();
    history.wrote(3, 'c');
    const expected = { generation: 3, id: 'c' };
    expect(history.saveOver(expected, { generation: 4, id: 'c', prev: 'b' })).toEqual({ generation: 4, id: 'c' });
    expect(history.newest).toEqual({ generation: 4, id: 'c' });
    expect(history.saveOver(expected, { generation: 5, id: 'rollback:x', prev: 'c' })).toEqual({
      generation: 5,
      id: 'rollback:x',
    });
    expect(history.saveOver({ generation: 5, id: 'rollback:x' }, { generation: 2, id: 'b', prev: 'a' })).toEqual({
      generation: 2,
      id: 'b',
    });
    expect(history.saveOver({ generation: 5, id: 'rollback:x' }, { generation: 0, id: null, prev: '' })).toEqual({
      generation: 0,
      id: '',
    });
    // Another rotation's record, newer than the highest seen: a conflict.
    expect(history.saveOver({ generation: 5, id: 'rollback:x' }, { generation: 6, id: 'z', prev: 'rollback:x' })).toBe(
      undefined,
    );
  });

  it("takes in the record of another rotation that a save's conflict shows: an older record read next is a rollback", () => {
    const { history } = holdingFirst();
    // The save over 'a' found another rotation's record 'b': it is not saved over, and it is the newest seen.
    expect(history.saveOver({ generation: 1, id: 'a' }, { generation: 2, id: 'b', prev: 'a' })).toBe(undefined);
    expect(history.newest).toEqual({ generation: 2, id: 'b' });
    // A failover to a replica that lacks 'b' (a split brain without `replicas`): 'a' read there is Redis going back.
    expect(history.see(1, 'a', '')).toBe('rollback');
  });

  it("renews the held key while saving over an older record of its own line, never over another line's", () => {
    const { history } = holdingFirst();
    expect(history.see(2, 'b', 'a')).toBe('adopted');
    expect(history.see(3, 'c', 'b')).toBe('adopted');
    const expected = { generation: 3, id: 'c' };
    expect(history.mayRenewWhileSaving('c')).toBe(true);
    // Redis went back to a record the held one replaced, or lost the record: the held key is still the newest.
    const ownLine = history.saveOver(expected, { generation: 2, id: 'b', prev: 'a' });
    expect(ownLine).toEqual({ generation: 2, id: 'b' });
    expect(history.mayRenewWhileSaving('c', ownLine)).toBe(true);
    expect(history.mayRenewWhileSaving('c', history.saveOver(expected, { generation: 0, id: null, prev: '' }))).toBe(
      true,
    );
    // Redis went back to 'a' and another instance rotated there: that rotation may have revoked 'c' and resolved.
    const otherLine = history.saveOver(expected, { generation: 2, id: 'x', prev: 'a' });
    expect(otherLine).toEqual({ generation: 2, id: 'x' });
    expect(history.mayRenewWhileSaving('c', otherLine)).toBe(false);
    expect(history.mayRenewWhileSaving('b')).toBe(false);
  });

  it('a resolved save grants trust until the lease the instance holds; an assumed condition is not reported again', () => {
    const { lease, history } = instance(OPTIONS);
    history.see(3, 'rollback:m', 'a');
    lease.assume('rollback');
    const seq = lease.nextSeq();
    // The placeholder's renewal meets the marker: no report, no trust.
    expect(
      lease.renewed(answer(seq, 3, 'rollback:m', 'a', 'stale'), {
        seq,
        sentAt: 0,
        now: 1,
        heldId: 'placeholder',
        canWriteForward: false,
      }),
    ).toEqual({});
    history.wrote(4, 'new');
    const next = lease.nextSeq();
    // Renewed on the record being saved, the placeholder held: a lease in the table, no trust in the placeholder.
    expect(
      lease.renewed(answer(next, 4, 'new', 'rollback:m'), {
        seq: next,
        sentAt: 10,
        now: 11,
        heldId: 'placeholder',
        canWriteForward: false,
        renewHeld: false,
      }),
    ).toEqual({ report: 'ok' });
    expect(lease.trustUntil).toBe(-Infinity);
    expect(lease.saveResolved()).toBe(910);
    expect(lease.trustUntil).toBe(910);
  });
});

describe('Lease: another server that holds the record still trusted', () => {
  it('keeps trusting through a slot move or failover while the trust lasts; quarantines once it has lapsed', () => {
    // holdingFirst(): generation 1 ('a'), trusted until 900.
    const moved = holdingFirst();
    const seq = moved.lease.nextSeq();
    const elsewhere = { ...answer(seq, 1, 'a', ''), serverId: 'other' };
    expect(
      moved.lease.renewed(elsewhere, { seq, sentAt: 500, now: 501, heldId: 'a', canWriteForward: true }),
    ).toMatchObject({
      trustUntil: 1400,
    });
    expect(moved.era.mayTrust(501)).toBe(true);

    const late = holdingFirst();
    const next = late.lease.nextSeq();
    const after = { ...answer(next, 1, 'a', ''), serverId: 'other' };
    // The same answer once the trust from the old server ran out: a rotation may have revoked 'a' and been lost.
    expect(late.lease.renewed(after, { seq: next, sentAt: 950, now: 951, heldId: 'a', canWriteForward: true })).toEqual(
      {},
    );
    expect(late.era.mayTrust(951)).toBe(false);
  });

  it('quarantines for the whole lease on a server that lost the record, though it then holds the one written forward', () => {
    const { lease, history, era } = holdingFirst();
    // A failover to a replica without the record (the other side of a split brain): this instance writes it forward.
    const seq = lease.nextSeq();
    const empty = { ...answer(seq, 0, null, '', 'stale'), serverId: 'promoted', epoch: null, ownSeq: 0 };
    const step = lease.renewed(empty, { seq, sentAt: 300, now: 301, heldId: 'a', canWriteForward: true });
    expect(step).toMatchObject({ writeForward: { expected: 0, expectedId: '', generation: 2 } });
    history.wrote(2, 'a', step.writeForward?.line);
    // The server holds 'a' now because this instance wrote it there: that shows nothing about a rotation on the
    // deposed primary, which did not wait for this lease. No trust before the quarantine ends (301 + 1100).
    const next = lease.nextSeq();
    const written = { ...answer(next, 2, 'a', ''), serverId: 'promoted', epoch: 'new', ownSeq: next };
    expect(lease.renewed(written, { seq: next, sentAt: 400, now: 401, heldId: 'a', canWriteForward: true })).toEqual(
      {},
    );
    expect(era.mayTrust(1400)).toBe(false);
    const last = lease.nextSeq();
    const later = { ...answer(last, 2, 'a', ''), serverId: 'promoted', epoch: 'new', ownSeq: last };
    expect(
      lease.renewed(later, { seq: last, sentAt: 1401, now: 1402, heldId: 'a', canWriteForward: true }),
    ).toMatchObject({ trustUntil: 2301 });
  });

  it('a renewal answered by the server it left, sent before the move was seen, neither moves it back nor ends the new quarantine', () => {
    const { lease, era } = holdingFirst();
    const before = lease.nextSeq();
    // The save's answer, sent at 505, comes from the slot's new primary first: another server, a quarantine.
    expect(era.observe({ ...answer(0, 1, 'a', ''), serverId: 'other' }, 511, undefined, 505)).toBe(true);
    // The renewal sent at 500, answered by the server the slot left: it tells nothing of the new server.
    expect(
      lease.renewed(answer(before, 1, 'a', ''), {
        seq: before,
        sentAt: 500,
        now: 512,
        heldId: 'a',
        canWriteForward: true,
      }),
    ).toEqual({});
    expect(era.mayTrust(512)).toBe(false);
    // The next renewal, on the new server, while the trust in 'a' lasts: no quarantine, and no second one.
    const seq = lease.nextSeq();
    const moved = { ...answer(seq, 1, 'a', ''), serverId: 'other' };
    expect(lease.renewed(moved, { seq, sentAt: 520, now: 521, heldId: 'a', canWriteForward: true })).toMatchObject({
      trustUntil: 1420,
    });
    expect(era.mayTrust(521)).toBe(true);
  });
});

describe('Lease: a newer record from the server an instance left', () => {
  /**
   * holdingFirst() ('a' at generation 1, trusted until 900); a failover, a renewal sent at 500 answered by the promoted
   * replica, which holds 'a': trusted until 1400 there. Meanwhile a save of 'b', sent at 400, is on its way to the
   * deposed primary, where another instance's rotation wrote 'c' over 'a'.
   */
  function promoted(): Instance {
    const held = holdingFirst();
    const { lease } = held;
    const seq = lease.nextSeq();
    const there = { ...answer(seq, 1, 'a', ''), serverId: 'promoted' };
    expect(lease.renewed(there, { seq, sentAt: 500, now: 501, heldId: 'a', canWriteForward: true })).toMatchObject({
      trustUntil: 1400,
    });
    return held;
  }
  const deposed = { generation: 2, id: 'c', prev: 'a', serverId: 'run', epoch: 'epoch', ownSeq: 1 };

  it("a save's conflict with a rotation there ends the trust in the held key: that rotation waited for the lease there only", () => {
    const { lease, history } = promoted();
    expect(history.saveOver({ generation: 1, id: 'a' }, deposed)).toBeUndefined();
    expect(lease.endTrustAfter('a', deposed, 400)).toBe(true);
    expect(lease.trustUntil).toBe(-Infinity);
  });

  it('a renewal answered there, sent before the move was seen, showing that rotation: the same', () => {
    const { lease } = promoted();
    const seq = lease.nextSeq();
    const step = lease.renewed(
      { status: 'stale', ...deposed },
      { seq, sentAt: 490, now: 510, heldId: 'a', canWriteForward: true },
    );
    expect(step.reload).toBe(true);
    expect(lease.endTrustAfter('a', deposed, 490)).toBe(true);
  });

  it('ends nothing for the held key itself, an older record, an answer of the present server, or one sent after the move', () => {
    const { lease, history } = promoted();
    expect(lease.endTrustAfter('a', { ...deposed, generation: 1, id: 'a', prev: '' }, 400)).toBe(false);
    history.see(2, 'c', 'a');
    expect(lease.endTrustAfter('a', { ...deposed, serverId: 'promoted' }, 400)).toBe(false);
    expect(lease.endTrustAfter('a', deposed, 500)).toBe(false);
    expect(lease.endTrustAfter('c', deposed, 400)).toBe(false);
    expect(lease.endTrustAfter('a', { ...deposed, generation: 1, id: 'z', prev: '' }, 400)).toBe(false);
    expect(lease.trustUntil).toBe(1400);
  });
});

describe('Lease: a record of another line of rotations', () => {
  // The instance saved 'h' over 'g' (generation 4); the other side of a split brain counted on from 'q' (2) to 'z'
  // (6) through records this instance never saw. 'z' has the higher generation, and never replaced 'h'.
  const other = {
    floor: 0,
    ids: [
      { id: 'm', generation: 5 },
      { id: 's', generation: 4 },
      { id: 'q', generation: 2 },
    ],
  };

  function holdingOwn(): Instance {
    const own = instance(OPTIONS);
    const { lease, history } = own;
    expect(history.see(2, 'q', '', undefined, { floor: 0, ids: [] })).toBe('adopted');
    history.wrote(3, 'g', history.lineFor(history.newest, 'g'));
    history.wrote(4, 'h', history.lineFor(history.newest, 'h'));
    expect(history.lineFor(history.newest, 'next')).toEqual({
      floor: 0,
      ids: [
        { id: 'h', generation: 4 },
        { id: 'g', generation: 3 },
        { id: 'q', generation: 2 },
      ],
    });
    const seq = lease.nextSeq();
    expect(
      lease.renewed(answer(seq, 4, 'h', 'g'), { seq, sentAt: 0, now: 1, heldId: 'h', canWriteForward: true }),
    ).toMatchObject({ trustUntil: 900 });
    return own;
  }

  it('is a rollback whatever its generation: never adopted, and the marker is written over it, trust or not', () => {
    const { lease, history } = holdingOwn();
    const seq = lease.nextSeq();
    const step = lease.renewed(
      { ...answer(seq, 6, 'z', 'm', 'stale'), line: other },
      { seq, sentAt: 10, now: 11, heldId: 'h', canWriteForward: true },
    );
    expect(step).toMatchObject({ marker: { expected: 6, expectedId: 'z', generation: 7 }, report: 'rollback' });
    expect(step.reload).toBeUndefined();
    expect(step.writeForward).toBeUndefined();
    expect(history.newest).toEqual({ generation: 4, id: 'h' });
    // The marker supersedes both lines, so that a rotation over it is newer for every instance of either side.
    expect(step.marker?.line.ids.map(({ id }) => id)).toEqual(['z', 'm', 'h', 's', 'g', 'q']);
  });

  it('a record written forward keeps its own line, plus the record it goes over', () => {
    const { lease } = holdingOwn();
    const seq = lease.nextSeq();
    // Redis went back to 'q', a record of this instance's own line: the held 'h' is written forward over it, and
    // still supersedes 'g', which only its own line names.
    const step = lease.renewed(
      { ...answer(seq, 2, 'q', '', 'stale'), line: { floor: 0, ids: [] } },
      { seq, sentAt: 10, now: 11, heldId: 'h', canWriteForward: true },
    );
    expect(step.writeForward).toEqual({
      expected: 2,
      expectedId: 'q',
      generation: 5,
      line: {
        floor: 0,
        ids: [
          { id: 'g', generation: 3 },
          { id: 'q', generation: 2 },
        ],
      },
    });
  });

  it('a record whose line names the held one is newer, and one whose line does not reach back so far is taken as newer', () => {
    for (const line of [
      {
        floor: 0,
        ids: [
          { id: 'y', generation: 5 },
          { id: 'h', generation: 4 },
          { id: 'g', generation: 3 },
        ],
      },
      { floor: 5, ids: [{ id: 'y', generation: 5 }] },
      undefined,
    ]) {
      const { lease, history } = holdingOwn();
      const seq = lease.nextSeq();
      const step = lease.renewed(
        { ...answer(seq, 6, 'z', 'y', 'stale'), ...(line === undefined ? {} : { line }) },
        { seq, sentAt: 10, now: 11, heldId: 'h', canWriteForward: true },
      );
      expect(step).toEqual({ reload: true });
      expect(history.newest).toEqual({ generation: 6, id: 'z' });
    }
  });
});
