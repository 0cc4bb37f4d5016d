// Simulated time: one queue of events in time order. After each event, every promise reaction it caused runs
// before the next event (the real authority and store are async code), so one seed gives one order of everything.

interface Event {
  readonly at: number;
  readonly order: number;
  readonly run: () => void;
  /** Set by the cancel function {@link Scheduler.cancellable} returned: the event is dropped when its time comes. */
  cancelled?: true;
}

export class Scheduler {
  readonly #heap: Event[] = [];
  #order = 0;
  /** The simulated true time, in ms. */
  now = 0;
  /** Events run so far. */
  events = 0;

  /** Runs `run` at simulated time `at` (never before now); events at one time run in the order they were pushed. */
  push(at: number, run: () => void): void {
    this.#add({ at: Math.max(at, this.now), order: (this.#order += 1), run });
  }

  /**
   * As {@link push}, and returns a function that cancels the event: a cancelled event is dropped when its time
   * comes, and nothing is checked after it (it changed nothing). Most timers are cancelled (a command's timeout, once
   * the answer came), and they are a third of the events.
   */
  cancellable(at: number, run: () => void): () => void {
    const event: Event = { at: Math.max(at, this.now), order: (this.#order += 1), run };
    this.#add(event);
    return () => {
      event.cancelled = true;
    };
  }

  #add(event: Event): void {
    const heap = this.#heap;
    // Sift up, moving parents down into the hole (no swap arrays: this runs for every event).
    let index = heap.length;
    heap.push(event);
    while (index > 0) {
      const parent = (index - 1) >> 1;
      const above = heap[parent] as Event;
      if (!before(event, above)) break;
      heap[index] = above;
      index = parent;
    }
    heap[index] = event;
  }

  /**
   * Runs the events up to time `until`, calling `check` after each one once its reactions have run. `check` may
   * throw to stop the run.
   */
  async run(until: number, check: () => void): Promise<void> {
    for (;;) {
      const top = this.#heap[0];
      if (top === undefined || top.at > until) break;
      this.#pop();
      if (top.cancelled === true) continue;
      this.now = top.at;
      top.run();
      this.events += 1;
      await settle();
      check();
    }
    this.now = Math.max(this.now, until);
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop();
    if (heap.length === 0 || last === undefined) return;
    // Sift down from the root, moving the smaller child up into the hole.
    let index = 0;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let smallest = last;
      let at = -1;
      if (left < heap.length && before(heap[left] as Event, smallest)) {
        smallest = heap[left] as Event;
        at = left;
      }
      if (right < heap.length && before(heap[right] as Event, smallest)) {
        smallest = heap[right] as Event;
        at = right;
      }
      if (at === -1) break;
      heap[index] = smallest;
      index = at;
    }
    heap[index] = last;
  }
}

function before(a: Event, b: Event): boolean {
  return a.at < b.at || (a.at === b.at && a.order < b.order);
}

/**
 * Resolves once every promise reaction queued so far, and every reaction those queue in turn, has run: Node runs
 * the whole microtask queue before its next tick callback (and a tick costs a fifth of an immediate, which also
 * polls for I/O). Nothing in the simulated code waits on real I/O, real timers or ticks of its own.
 */
export function settle(): Promise<void> {
  return new Promise((resolve) => process.nextTick(resolve));
}
