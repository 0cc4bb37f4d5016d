// One instance's history, pure: the records it has seen on its own line (the newest and its ancestors), and how a
// record that an answer shows compares with them (newer, late, or Redis gone back). The lease (lease.ts), the store's
// reads and saves (store.ts) and the acknowledgement reads (ack-reader.ts) take their records in here.
import { isRollback, lineOver, replaces, type Line, type Seen } from './line.js';
import type { ConfirmReply } from './lease-events.js';

/** How many records before the newest one an instance remembers as its own line. */
const LINEAGE = 16;

/** The prefix of the rollback marker's id (a value without a key, see codec.ts): no record id has it. */
export const MARKER_PREFIX = 'rollback:';

/**
 * How a record read from Redis compares with the newest one seen (see `History.see`):
 * - `adopted`: not older than the newest seen; it is the newest now if it is newer;
 * - `late`: older than the newest seen now, not older than the newest seen when the command was sent: Redis
 *   answered before a newer record was written, and that record's own answer was taken in first;
 * - `rollback`: older than the newest seen when the command was sent: Redis went back.
 */
export type Sighting = 'adopted' | 'late' | 'rollback';

export class History {
  #newest: Seen = { generation: 0, id: '' };
  /**
   * The records that came before the newest one on this instance's line of records (ids it held as the newest, and
   * what each replaced), newest last: a record Redis went back to that is among them is one no rotation replaced
   * on Redis since; any other is a record of another line (a split brain's other side, or a rotation made on a
   * Redis that had gone back), which may have revoked what this instance holds.
   */
  readonly #ancestors: string[] = [];
  /** What the newest record supersedes, and the same for the last few records seen (for a save over one of them). */
  #newestLine: Line | undefined;
  readonly #recentLines = new Map<string, Line>();

  get newest(): Seen {
    return this.#newest;
  }

  /** Whether `id` is a record of this instance's own line: the newest seen, or one of its ancestors. */
  ownLine(id: string): boolean {
    return id === this.#newest.id || this.#ancestors.includes(id);
  }

  /**
   * Whether renewals during a save from `heldId` may extend the trust in `heldId`: only when `heldId` is the
   * newest record seen. An instance behind (a rotation overtook it) must not have the old key it holds renewed on
   * the strength of its own newer save. Nor one whose save goes `over` an older record of another line (see
   * {@link History.saveOver}): a rotation made on a Redis that went back, which may have revoked the held key and
   * resolved while this instance could not renew.
   */
  mayRenewWhileSaving(heldId: string, over?: Seen): boolean {
    if (heldId !== this.#newest.id) return false;
    return over === undefined || over.id === '' || over.id.startsWith(MARKER_PREFIX) || this.ownLine(over.id);
  }

  /**
   * Whether a newer record of this instance's line replaced `id` (directly or through later ones): saving `id` again
   * would bring back a key that a rotation replaced.
   */
  replaced(id: string): boolean {
    return this.#revived(id, this.#newest);
  }

  /**
   * Takes in a record (`id === null` when missing) that a read or a renewal showed, judged against `sent`: the
   * newest record seen when the command was sent (the present one by default). Answers that arrive together are
   * not always taken in the order Redis sent them, so a record seen since (the instance's own save, a
   * write-forward, another answer) may have been written after Redis ran this one. Only a newer record is adopted.
   */
  see(generation: number, id: string | null, prev: string, sent: Seen = this.#newest, line?: Line): Sighting {
    if (id !== null && line !== undefined) {
      this.#recentLines.set(id, line);
      if (this.#recentLines.size > 8) this.#recentLines.delete(this.#recentLines.keys().next().value ?? '');
    }
    if (isRollback(sent, generation, id, prev, line) || this.#revived(id, sent)) return 'rollback';
    if (isRollback(this.#newest, generation, id, prev, line) || this.#revived(id, this.#newest)) return 'late';
    if (id !== null && (generation > this.#newest.generation || replaces(this.#newest, prev, line))) {
      this.#raise({ generation, id }, prev, line);
    }
    return 'adopted';
  }

  /**
   * What a record `id` written over `expected` (its id '' when missing) supersedes: that record and this
   * instance's newest one, each with its line, but never itself (a record written forward keeps its own line).
   */
  lineFor(expected: Seen, id: string): Line {
    const over = [{ seen: this.#newest, line: this.#newestLine }];
    if (expected.id !== this.#newest.id) over.push({ seen: expected, line: this.#recentLines.get(expected.id) });
    const line = lineOver(over.filter(({ seen }) => seen.id !== ''));
    return { ...line, ids: line.ids.filter((seen) => seen.id !== id) };
  }

  /**
   * A save that expected `expected` found `observed` in Redis instead: the record to save over (once), when it holds
   * no key that another rotation made: `expected` written forward by another instance (the same record at a later
   * generation), a rollback marker, or a record older than the newest seen (Redis went back). `undefined`: another
   * rotation came first. Taken in as seen either way: a record older than another rotation's, read next (a failover
   * to a replica that lacks it), is Redis going back.
   */
  saveOver(expected: Seen, observed: Pick<ConfirmReply, 'generation' | 'id' | 'prev' | 'line'>): Seen | undefined {
    const { generation, id, prev, line } = observed;
    const forward = expected.id !== '' && id === expected.id && generation > expected.generation;
    // Judged against the newest record seen, a rollback is a record older than it.
    const older = this.see(generation, id, prev, this.#newest, line) === 'rollback';
    if (!forward && id?.startsWith(MARKER_PREFIX) !== true && !older) return undefined;
    return { generation, id: id ?? '' };
  }

  /**
   * A record written forward or saved by this instance at `generation`, superseding `line`, is now the newest,
   * unless a record that its line does not name was seen while the write was on its way (an answer that Redis sent
   * before it went back, taken in after the write was sent): that record stays the newest, the written one a
   * rollback to it.
   */
  wrote(generation: number, id: string, line?: Line): void {
    const over = line?.ids.some((seen) => seen.id === this.#newest.id) === true;
    if (!over && isRollback(this.#newest, generation, id, '', line)) return;
    if (generation >= this.#newest.generation) this.#raise({ generation, id }, '', line);
  }

  /**
   * Whether `id` is a record older than `than` on this instance's line (one that `than`, or one before it,
   * replaced), back whatever its generation: written forward by an instance that never saw what replaced it.
   */
  #revived(id: string | null, than: Seen): boolean {
    if (id === null || id === than.id) return false;
    const at = this.#ancestors.indexOf(id);
    const limit = than.id === this.#newest.id ? this.#ancestors.length : this.#ancestors.indexOf(than.id);
    return at !== -1 && at < limit;
  }

  /** `record`, which replaced `prev` ('' when unknown), is the newest now; the one before joins the line. */
  #raise(record: Seen, prev: string, line: Line | undefined): void {
    this.#newestLine = line;
    for (const id of [this.#newest.id, prev]) {
      if (id === '' || id === record.id || this.#ancestors.includes(id)) continue;
      this.#ancestors.push(id);
      if (this.#ancestors.length > LINEAGE) this.#ancestors.shift();
    }
    this.#newest = record;
  }
}
