// The records' `line` field checked against what Redis really held: docs/several-instances.md promises that a
// record's line names every record it supersedes (what it replaced, directly or through others) at or above the
// line's floor. An instance tells a newer record from another line's by that promise alone.
import { parseLine } from '../../src/stores/redis/line.js';

export class LineCheck {
  /** The record each record (or marker) replaced when a primary first held it. */
  readonly #prev = new Map<string, string>();
  /** The generation each record (or marker) had when a primary first held it. */
  readonly #born = new Map<string, number>();

  /**
   * A primary now holds the record `id` (`value`, which replaced `prev`): what is wrong with its line, or `undefined`.
   * The records it supersedes are those before it as each was first held (a record written forward later still
   * supersedes what it replaced at first).
   */
  written(id: string, generation: number, prev: string, value: string): string | undefined {
    if (!this.#born.has(id)) {
      this.#born.set(id, generation);
      this.#prev.set(id, prev);
    }
    const field = (JSON.parse(value) as { line?: unknown }).line;
    const line = parseLine(field);
    if (line === undefined) return undefined;
    const named = new Set(line.ids.map((seen) => seen.id));
    for (let at = this.#prev.get(id), steps = 0; at !== undefined && at !== ''; steps += 1) {
      if (steps > this.#prev.size) break;
      const born = this.#born.get(at);
      if (born !== undefined && born >= line.floor && !named.has(at))
        return `${id} (generation ${generation}) supersedes ${at} (generation ${born}) but its line does not name it`;
      at = this.#prev.get(at);
    }
    return undefined;
  }
}
