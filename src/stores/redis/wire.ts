// The scripts' answers (arrays, scripts.ts) as the protocol's observations (replies.ts).
import type { PendingReply } from './acks.js';
import type { Observed } from './replies.js';

function text(value: unknown): string {
  return typeof value === 'string' ? value : value instanceof Buffer ? value.toString('utf8') : '';
}

function count(value: unknown): number {
  const number = typeof value === 'number' ? value : Number(text(value));
  return Number.isSafeInteger(number) && number >= 0 ? number : 0;
}

/** The status and observation at the head of every script's answer; `undefined` for an answer of another shape. */
export function observation(reply: unknown): { status: string; observed: Observed } | undefined {
  if (!Array.isArray(reply) || reply.length < 7) return undefined;
  const id = text(reply[2]);
  const epoch = text(reply[5]);
  return {
    status: text(reply[0]),
    observed: {
      generation: count(reply[1]),
      id: id === '' ? null : id,
      prev: text(reply[3]),
      runId: text(reply[4]),
      epoch: epoch === '' ? null : epoch,
      ownSeq: count(reply[6]),
    },
  };
}

/** PENDING's answer: the observation, then the instances waited on. */
export function pendingOf(reply: unknown): PendingReply | undefined {
  const head = observation(reply);
  if (head === undefined) return undefined;
  const rest = (reply as unknown[]).slice(7);
  const waiting: Array<readonly [string, number]> = [];
  for (let index = 0; index + 1 < rest.length; index += 2) waiting.push([text(rest[index]), count(rest[index + 1])]);
  return { ...head.observed, waiting };
}
