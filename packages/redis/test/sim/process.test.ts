// The simulated process's pauses: what a pause holds back runs in the order it came due, also when a second pause
// begins before the first one ends (the world's model of the store counts on it: an answer that arrives after the
// command's timer came due is never taken in).
import { describe, expect, it } from 'vitest';
import { SimProcess } from './process.js';
import { Prng } from './prng.js';
import { Deployment } from './redis.js';
import { Scheduler } from './scheduler.js';

function world(): { scheduler: Scheduler; process: SimProcess } {
  const scheduler = new Scheduler();
  const rng = new Prng(1);
  const redis = new Deployment(scheduler, rng, 0);
  const process = new SimProcess({ name: 'p1/s0', slot: 0, scheduler, rng, redis, rateSpread: 0, sentinel: false });
  return { scheduler, process };
}

describe('SimProcess: pauses', () => {
  it('a timer that came due in a first pause runs before an answer that arrived after it, once a second pause extended the first', async () => {
    const { scheduler, process } = world();
    const order: string[] = [];
    process.pause(100);
    process.runtime.timer(20, () => order.push('timer'));
    scheduler.push(50, () => process.pause(200));
    scheduler.push(80, () => process.whenRunning(() => order.push('answer')));
    await scheduler.run(300, () => undefined);
    expect(order).toEqual(['timer', 'answer']);
  });

  it('nothing held back runs before the pause ends, and a pause that ends sooner changes nothing', async () => {
    const { scheduler, process } = world();
    const ran: number[] = [];
    process.pause(100);
    scheduler.push(10, () => process.whenRunning(() => ran.push(scheduler.now)));
    scheduler.push(20, () => process.pause(50));
    await scheduler.run(300, () => undefined);
    expect(ran).toEqual([100]);
  });
});
