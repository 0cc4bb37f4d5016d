// A record's line: the records it supersedes, so that an instance can tell a newer record from one of another line.
// Generations alone order the records of one line only: the two sides of a split brain (or a rotation made on a
// Redis that went back) each count on from the same record, and a record of the other side can have the higher
// generation while it never replaced what this instance holds, nor waited for it.

/** A record's place: its generation and id. */
export interface Seen {
  readonly generation: number;
  readonly id: string;
}

/**
 * The records a record supersedes (its predecessor, what that one superseded, and, for a record written over one
 * that went back, the writer's own newest record and its line), with this promise: every record it supersedes
 * whose generation is `floor` or more is in `ids`. Below `floor` it says nothing.
 */
export interface Line {
  readonly ids: readonly Seen[];
  readonly floor: number;
}

/** How many records a line names at most: the lowest generations go first, and the floor rises past them. */
const LINE_LENGTH = 16;

/** What a record supersedes: `records`, each with its own line when known (unknown below the record itself). */
export function lineOver(records: ReadonlyArray<{ readonly seen: Seen; readonly line: Line | undefined }>): Line {
  const ids = new Map<string, number>();
  let floor = 0;
  for (const { seen, line } of records) {
    floor = Math.max(floor, line?.floor ?? seen.generation);
    for (const { id, generation } of [seen, ...(line?.ids ?? [])]) {
      ids.set(id, Math.max(generation, ids.get(id) ?? 0));
    }
  }
  let kept = [...ids].map(([id, generation]) => ({ id, generation })).sort((a, b) => b.generation - a.generation);
  // Past the longest line, from the first record left out: every record above it is kept.
  if (kept.length > LINE_LENGTH) floor = Math.max(floor, (kept[LINE_LENGTH]?.generation ?? 0) + 1);
  kept = kept.filter(({ generation }) => generation >= floor);
  return { ids: kept, floor };
}

/**
 * Whether a record whose line is `line` is of another line than `newest`: its line reaches back to `newest`'s
 * generation and does not name it. Such a record never replaced `newest`, directly or through others, so the
 * rotation that wrote it did not wait for the instances that trust `newest`. `false` when the line is unknown.
 */
export function otherLine(newest: Seen, line: Line | undefined): boolean {
  if (line === undefined || newest.generation < line.floor) return false;
  return !line.ids.some(({ id }) => id === newest.id);
}

/** The line as a stored record's `line` field: the floor, then each `id@generation`. */
export function encodeLine(line: Line): string {
  return [String(line.floor), ...line.ids.map(({ id, generation }) => `${id}@${generation}`)].join(',');
}

/** A stored `line` field; `undefined` when there is none (a record written before lines) or it is malformed. */
export function parseLine(text: unknown): Line | undefined {
  if (typeof text !== 'string' || text === '' || text.length > 4096) return undefined;
  const [head = '', ...rest] = text.split(',');
  const floor = Number(head);
  if (!Number.isSafeInteger(floor) || floor < 0) return undefined;
  const ids: Seen[] = [];
  for (const part of rest) {
    const at = part.lastIndexOf('@');
    const generation = Number(part.slice(at + 1));
    if (at < 1 || !Number.isSafeInteger(generation) || generation < 1) return undefined;
    ids.push({ id: part.slice(0, at), generation });
  }
  return { ids, floor };
}

/**
 * Whether a record that replaced `prev` and supersedes `line` replaced `newest`, directly or through others. Its
 * `prev` alone does not tell when it was saved over a record that went back (or over none): then its line names
 * the writer's own newest record, the key its rotation replaced.
 */
export function replaces(newest: Seen, prev: string, line: Line | undefined): boolean {
  return prev === newest.id || line?.ids.some(({ id }) => id === newest.id) === true;
}

/**
 * Whether a stored record (`generation`, `id`, the id it replaced `prev`, what it supersedes `line`; `id === null`
 * when missing) is older than `newest`: missing, a lower generation, another record of the same generation that
 * did not replace it, or a record of another line (see line.ts) whatever its generation. A record that replaced
 * the newest one is its successor whatever its generation (a rotation made by an instance that had not seen a
 * write-forward, over that record or over one that went back).
 */
export function isRollback(newest: Seen, generation: number, id: string | null, prev: string, line?: Line): boolean {
  if (newest.generation === 0) return false;
  if (id === null) return true;
  if (id === newest.id) return generation < newest.generation;
  if (replaces(newest, prev, line)) return false;
  return generation <= newest.generation || otherLine(newest, line);
}
