// The answer every script gives (scripts.ts builds it, the store and the protocol read it): its layout, defined here
// once, and its parsing into the protocol's observations.
import { parseLine, type Line } from './line.js';

/** The record as Redis holds it when a script ran: its generation and id, or neither when the key is missing. */
export interface Observed {
  /** 0 when the record is missing. */
  readonly generation: number;
  /** `null` when the record is missing. */
  readonly id: string | null;
  /** The id of the record this one replaced ('' for the first, or when written forward over a missing one). */
  readonly prev: string;
  /**
   * The server's identity, `<run_id>:<master_replid>`. The `run_id` is new at every start of a server; the
   * replication id is new whenever a server becomes a primary (a start, a promotion), so a failback to a former
   * primary that had rejoined as a replica changes it too. A change means Redis may have lost writes (a restart, a
   * failover, a failback to a server that lags), so the instance table may be missing entries.
   */
  readonly serverId: string;
  /** The instance table's random epoch, written when the table is created; `null` when there is no table. */
  readonly epoch: string | null;
  /** The renewal number of the calling instance's own table entry; 0 when it has none. */
  readonly ownSeq: number;
  /** The records the record supersedes (line.ts); `undefined` when unknown (none stored, or missing). */
  readonly line?: Line;
}

/** The answer of one acknowledgement read (the PENDING script). */
export interface PendingReply extends Observed {
  /** Other instances in the table that have not acknowledged the generation: their ids and renewal numbers. */
  readonly waiting: ReadonlyArray<readonly [instance: string, seq: number]>;
}

/**
 * The head of every script's answer, in this order: the script's status, then the observation. What a script
 * answers besides (PENDING's instances, LOAD's value) follows from index {@link HEAD_LENGTH} on.
 */
export const REPLY_HEAD = ['status', 'generation', 'id', 'prev', 'serverId', 'epoch', 'ownSeq', 'line'] as const;
export type ReplyField = (typeof REPLY_HEAD)[number];
export const HEAD_LENGTH = REPLY_HEAD.length;
const AT = Object.fromEntries(REPLY_HEAD.map((field, index) => [field, index])) as Record<ReplyField, number>;

function text(value: unknown): string {
  return typeof value === 'string' ? value : value instanceof Buffer ? value.toString('utf8') : '';
}

function count(value: unknown): number {
  const number = typeof value === 'number' ? value : Number(text(value));
  return Number.isSafeInteger(number) && number >= 0 ? number : 0;
}

/** The status and observation at the head of every script's answer; `undefined` for an answer of another shape. */
export function observation(reply: unknown): { status: string; observed: Observed } | undefined {
  if (!Array.isArray(reply) || reply.length < HEAD_LENGTH) return undefined;
  const id = text(reply[AT.id]);
  const epoch = text(reply[AT.epoch]);
  const line = parseLine(text(reply[AT.line]));
  return {
    status: text(reply[AT.status]),
    observed: {
      generation: count(reply[AT.generation]),
      id: id === '' ? null : id,
      prev: text(reply[AT.prev]),
      serverId: text(reply[AT.serverId]),
      epoch: epoch === '' ? null : epoch,
      ownSeq: count(reply[AT.ownSeq]),
      ...(line === undefined ? {} : { line }),
    },
  };
}

/** LOAD's answer: the observation, then the stored value ('' when missing) as node-redis decoded it. */
export function loadOf(reply: unknown): { status: string; observed: Observed; value: unknown } | undefined {
  const head = observation(reply);
  return head === undefined ? undefined : { ...head, value: (reply as unknown[])[HEAD_LENGTH] };
}

/** PENDING's answer: the observation, then the instances waited on. */
export function pendingOf(reply: unknown): PendingReply | undefined {
  const head = observation(reply);
  if (head === undefined) return undefined;
  const rest = (reply as unknown[]).slice(HEAD_LENGTH);
  const waiting: Array<readonly [string, number]> = [];
  for (let index = 0; index + 1 < rest.length; index += 2) waiting.push([text(rest[index]), count(rest[index + 1])]);
  return { ...head.observed, waiting };
}
