// The records' `line` field checked against what Redis really held: docs/several-instances.md promises that a
// record's line names every record it supersedes (what it replaced, directly or through others) at or above the
// line's floor. An instance tells a newer record from another line's by that promise alone.
import { parseLine } from '../../src/line.js';

export class LineCheck {
  /** The record each record (or marker) replaced when a primary first held it. */
  readonly #prev = new Map<string, string>();
  /** The generation each record (or marker) had when a primary first held it. */
  readonly #born = new Map<string, number>();
  /**
   * The records each record (or marker) supersedes by what Redis held: those it was written over, by any of its
   * writes (a write-forward goes over another), and those its lines name (a record saved over a marker supersedes
   * what the marker stood for).
   */
  readonly #over = new Map<string, Set<string>>();

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
    if (prev !== '') this.#supersedes(id).add(prev);
    const field = (JSON.parse(value) as { line?: unknown }).line;
    const line = parseLine(field);
    if (line === undefined) return undefined;
    const named = new Set(line.ids.map((seen) => seen.id));
    for (const earlier of named) this.#supersedes(id).add(earlier);
    for (let at = this.#prev.get(id), steps = 0; at !== undefined && at !== ''; steps += 1) {
      if (steps > this.#prev.size) break;
      const born = this.#born.get(at);
      if (born !== undefined && born >= line.floor && !named.has(at))
        return `${id} (generation ${generation}) supersedes ${at} (generation ${born}) but its line does not name it`;
      at = this.#prev.get(at);
    }
    return undefined;
  }

  /**
   * Whether `id` replaced `earlier`, directly or earlier: a primary held it written over `earlier`, or with a line
   * that names it, or so through the records it superseded in turn.
   */
  replaced(id: string, earlier: string): boolean {
    const seen = new Set<string>();
    for (const next = [id]; next.length > 0;) {
      const at = next.pop() as string;
      for (const over of this.#over.get(at) ?? []) {
        if (over === earlier) return true;
        if (!seen.has(over)) next.push(over);
        seen.add(over);
      }
    }
    return false;
  }

  #supersedes(id: string): Set<string> {
    let set = this.#over.get(id);
    if (set === undefined) this.#over.set(id, (set = new Set()));
    return set;
  }
}
