// `npm run simulate -- --seed N` replays one schedule with its trace; `--count N [--from S]` explores many.
import { planFor, simulate, type Plan } from './world.js';

export interface Exploration {
  readonly schedules: number;
  readonly events: number;
  readonly excused: number;
  readonly resolved: number;
  readonly ownRefused: number;
  /** Without a loss, the longest an instance refused the current token after it could renew again (true ms). */
  readonly refusedFor: number;
  /** The longest refusal after an instance that did not trust the record first heard from another server. */
  readonly quarantinedFor: number;
  readonly failure?: { readonly seed: number; readonly report: string };
}

/** A plan with as few faults as still break an invariant (greedy removal, one fault at a time). */
export async function shrink(seed: number, plan: Plan): Promise<Plan> {
  let current = plan;
  for (let index = current.faults.length - 1; index >= 0; index -= 1) {
    const candidate = { ...current, faults: current.faults.filter((_, at) => at !== index) };
    if ((await simulate(seed, candidate)).violation !== undefined) current = candidate;
  }
  return current;
}

/** Runs `count` schedules from seed `from`; stops at the first broken invariant with its minimal trace. */
export async function explore(from: number, count: number): Promise<Exploration> {
  let events = 0;
  let excused = 0;
  let resolved = 0;
  let ownRefused = 0;
  let refusedFor = 0;
  let quarantinedFor = 0;
  for (let seed = from; seed < from + count; seed += 1) {
    const plan = planFor(seed);
    const result = await simulate(seed, plan);
    events += result.events;
    excused += result.excused;
    resolved += result.outcomes.resolved ?? 0;
    ownRefused += result.ownRefused;
    refusedFor = Math.max(refusedFor, result.refusedFor);
    quarantinedFor = Math.max(quarantinedFor, result.quarantinedFor);
    if (result.violation !== undefined) {
      const minimal = await shrink(seed, plan);
      const replay = await simulate(seed, minimal, true);
      const report = [
        `seed ${seed}: ${result.violation}`,
        `replay: npm run simulate -- --seed ${seed}`,
        `minimal plan: ${JSON.stringify({ ...minimal, faults: undefined })} ${JSON.stringify(minimal.faults)}`,
        ...replay.trace.slice(-60),
      ].join('\n');
      return {
        schedules: seed - from + 1,
        events,
        excused,
        resolved,
        ownRefused,
        refusedFor,
        quarantinedFor,
        failure: { seed, report },
      };
    }
  }
  return { schedules: count, events, excused, resolved, ownRefused, refusedFor, quarantinedFor };
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
    const result = await simulate(seed, plan, true);
    console.log(result.trace.join('\n'));
    console.log(
      result.violation === undefined
        ? `seed ${seed}: every invariant held (${result.events} events)`
        : `seed ${seed}: ${result.violation}`,
    );
    process.exitCode = result.violation === undefined ? 0 : 1;
  } else {
    const count = flag('count') ?? 50_000;
    const from = flag('from') ?? 1;
    // An exploration reads no stack (a failure is replayed by its seed, with stacks): the errors the library makes
    // on its way (a command timed out, a save refused, thousands of them) are made without one.
    Error.stackTraceLimit = 0;
    const started = performance.now();
    const result = await explore(from, count);
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `${result.schedules} schedules, ${result.events} events in ${seconds.toFixed(1)} s (${Math.round(result.schedules / seconds)} schedules/s); ${result.excused} acceptances under the documented exception; ${result.resolved} rotations resolved, ${result.ownRefused} of them while the rotating instance refused its own new token; without a loss, an instance refused the current token for at most ${result.refusedFor.toFixed(1)} ms after it could renew, or ${result.quarantinedFor.toFixed(1)} ms after it first heard from another server without trusting the record it holds`,
    );
    if (result.failure !== undefined) {
      console.log(result.failure.report);
      process.exitCode = 1;
    }
  }
}
