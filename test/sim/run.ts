// `npm run simulate -- --seed N` replays one schedule with its trace; `--count N [--from S]` explores many.
import { REAL, planFor, shrink, simulate, type Variant } from './world.js';

export interface Exploration {
  readonly schedules: number;
  readonly events: number;
  readonly failure?: { readonly seed: number; readonly report: string };
}

/** Runs `count` schedules from seed `from`; stops at the first broken invariant with its minimal trace. */
export function explore(from: number, count: number, variant: Variant = REAL): Exploration {
  let events = 0;
  for (let seed = from; seed < from + count; seed += 1) {
    const plan = planFor(seed);
    const result = simulate(seed, plan, variant);
    events += result.events;
    if (result.violation !== undefined) {
      const minimal = shrink(seed, plan, variant);
      const replay = simulate(seed, minimal, variant, true);
      const report = [
        `seed ${seed}: ${result.violation}`,
        `replay: npm run simulate -- --seed ${seed}`,
        `minimal plan (${minimal.instances} instances): ${JSON.stringify(minimal.faults)}`,
        ...replay.trace.slice(-40),
      ].join('\n');
      return { schedules: seed - from + 1, events, failure: { seed, report } };
    }
  }
  return { schedules: count, events };
}

function flag(name: string): number | undefined {
  const index = process.argv.indexOf(`--${name}`);
  if (index === -1) return undefined;
  const value = Number(process.argv[index + 1]);
  if (!Number.isSafeInteger(value)) throw new TypeError(`--${name} needs a whole number`);
  return value;
}

if (process.argv[1] !== undefined && import.meta.url.endsWith(process.argv[1].split('/').pop() ?? '\0')) {
  const seed = flag('seed');
  if (seed !== undefined) {
    const plan = planFor(seed);
    const result = simulate(seed, plan, REAL, true);
    console.log(result.trace.join('\n'));
    console.log(
      result.violation === undefined
        ? `seed ${seed}: every invariant held (${result.events} events)`
        : `seed ${seed}: ${result.violation}`,
    );
    process.exitCode = result.violation === undefined ? 0 : 1;
  } else {
    const count = flag('count') ?? 20_000;
    const from = flag('from') ?? 1;
    const started = performance.now();
    const result = explore(from, count);
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `${result.schedules} schedules, ${result.events} events in ${seconds.toFixed(1)} s (${Math.round(result.schedules / seconds)} schedules/s)`,
    );
    if (result.failure !== undefined) {
      console.log(result.failure.report);
      process.exitCode = 1;
    }
  }
}
