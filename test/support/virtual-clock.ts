// A virtual clock for the property tests: timers fire in order of their time, and every promise reaction they set
// off runs before the next one fires (nothing in a model waits on real I/O, so one turn of the event loop drains
// them all). A run of many seconds of store time takes a few event-loop turns, and replays from its seed.
import type { Runtime } from '../../src/authority/runtime.js';

export const drain = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

interface Pending {
  readonly at: number;
  readonly seq: number;
  readonly callback: () => void;
}

export class Clock {
  now = 0;
  #timers: Pending[] = [];
  #seq = 0;
  readonly timer: Runtime['timer'] = (ms, callback) => {
    const entry = { at: this.now + ms, seq: this.#seq++, callback };
    this.#timers.push(entry);
    return () => {
      this.#timers = this.#timers.filter((timer) => timer !== entry);
    };
  };
  async advance(ms: number): Promise<void> {
    const target = this.now + ms;
    for (;;) {
      // Reactions first: they may set timers that are already due.
      await drain();
      let next: Pending | undefined;
      for (const timer of this.#timers) {
        if (
          timer.at <= target &&
          (next === undefined || timer.at < next.at || (timer.at === next.at && timer.seq < next.seq))
        ) {
          next = timer;
        }
      }
      if (next === undefined) break;
      this.#timers = this.#timers.filter((timer) => timer !== next);
      this.now = next.at;
      next.callback();
    }
    this.now = target;
  }
}
