// A small seeded PRNG (sfc32, seeded by splitmix32): every choice of the simulator comes from one of these.

function splitmix32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class Prng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  constructor(seed: number) {
    const mix = splitmix32(seed);
    this.#a = mix();
    this.#b = mix();
    this.#c = mix();
    this.#d = mix();
  }

  /** A uniform 32-bit unsigned integer. */
  next(): number {
    const a = this.#a,
      b = this.#b,
      c = this.#c,
      d = this.#d;
    const t = (((a + b) >>> 0) + d) >>> 0;
    this.#d = (d + 1) >>> 0;
    this.#a = b ^ (b >>> 9);
    this.#b = (c + (c << 3)) >>> 0;
    this.#c = ((c << 21) | (c >>> 11)) >>> 0;
    this.#c = (this.#c + t) >>> 0;
    return t;
  }

  /** A float in [0, 1). */
  float(): number {
    return this.next() / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.float() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.float() * items.length)] as T;
  }

  /** A short random name (ids, run ids, epochs). */
  name(): string {
    return this.next().toString(36);
  }
}
