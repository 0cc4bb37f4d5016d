// Rotation under load, over real loopback sockets: behind every adapter, concurrent requests carry the newest
// token and the one or two before it while rotate() runs 200 times (25 in `npm test`). Each request's send and answer times are
// set against each rotation's call and resolution: no token is accepted once the rotation that revoked it has
// resolved, and no token is refused while it is current for the whole request.
import { Agent, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { MemorySecretStore, TokenAuthority } from 'launcher-auth';
import { HOST_KINDS, startHost, type Host } from '../adapters/harness.js';
import { budget } from '../support/machine.js';
import { deepOr } from '../support/tier.js';
import { until } from '../support/poll.js';
import { reportFigures } from './fixtures/support.js';

const ROTATIONS = deepOr(200, 25);
const IN_FLIGHT = 24;
/** A bound for a stuck run only (the test's timeout), far above the ~6 s a run takes on an idle machine. */
const STUCK_MS = budget(60_000);

interface Sent {
  generation: number;
  sentAt: number;
  answeredAt: number;
  status: number;
  bodyLength: number;
}

interface Rotation {
  calledAt: number;
  resolvedAt: number;
}

function get(
  port: number,
  agent: Agent,
  token: string,
): Promise<{ status: number; bodyLength: number; sentAt: number; answeredAt: number }> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/apps', agent, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        const answeredAt = performance.now();
        let bodyLength = 0;
        res.on('data', (chunk: Buffer) => (bodyLength += chunk.length));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bodyLength, sentAt, answeredAt }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    const sentAt = performance.now();
    req.end();
  });
}

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe.each(HOST_KINDS)('%s adapter', (kind) => {
  it(
    `${ROTATIONS} rotations under ${IN_FLIGHT} requests in flight: no revoked token accepted, no current one refused`,
    async () => {
      const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
      cleanups.push(() => authority.close());
      const host: Host = await startHost(kind, authority);
      cleanups.push(() => host.close());
      const agent = new Agent({ keepAlive: true, maxSockets: IN_FLIGHT });
      cleanups.push(() => agent.destroy());

      // tokens[g]: the token of generation g; rotations[g]: the rotation that made generation g current (g ≥ 1).
      const tokens: string[] = [authority.issue()];
      const rotations: Rotation[] = [{ calledAt: -Infinity, resolvedAt: -Infinity }];
      const sent: Sent[] = [];
      const failures: string[] = [];
      let rotating = true;

      // freshAnswers[g]: answers to requests with generation g's token sent after the rotation that made it current.
      const freshAnswers: number[] = [0];
      const rotator = (async () => {
        // Every rotation is reached however slow the machine: the run is counted in rotations, not in time.
        while (rotations.length <= ROTATIONS) {
          const calledAt = performance.now();
          const token = await authority.rotate();
          rotations.push({ calledAt, resolvedAt: performance.now() });
          freshAnswers.push(0);
          tokens.push(token);
          // Each generation stays current until a whole request with its token has fitted in (however slow the
          // machine), then a short pause: the run sees requests answered while their token was current every time.
          const generation = tokens.length - 1;
          expect(await until(() => freshAnswers[generation] !== 0, 20_000, 1)).toBe(true);
          // eslint-disable-next-line launcher-auth-tests/no-wall-clock-wait -- how long a generation stays current is what varies
          await new Promise((resolve) => setTimeout(resolve, 4 + (rotations.length % 8)));
        }
        rotating = false;
      })();

      const worker = async (seed: number): Promise<void> => {
        let n = seed;
        while (rotating) {
          const newest = tokens.length - 1;
          // Half the requests carry the newest token, the rest the one or two before it.
          const generation = Math.max(0, newest - (n++ % 4 < 2 ? 0 : (n % 2) + 1));
          try {
            const answer = await get(host.port, agent, tokens[generation] as string);
            sent.push({ generation, ...answer });
            if (answer.sentAt > (rotations[generation] as Rotation).resolvedAt) {
              freshAnswers[generation] = (freshAnswers[generation] ?? 0) + 1;
            }
          } catch (error) {
            failures.push(error instanceof Error ? error.message : 'request failed');
          }
        }
      };
      await Promise.all([rotator, ...Array.from({ length: IN_FLIGHT }, (_, i) => worker(i))]);

      // (c) Every answer is 200 or the uniform 401, and nothing failed.
      expect(failures).toEqual([]);
      expect(sent.filter((s) => s.status !== 200 && s.status !== 401).map((s) => s.status)).toEqual([]);
      expect(sent.filter((s) => s.status === 401 && s.bodyLength !== 0).length).toBe(0);

      let revokedRefused = 0;
      let currentAccepted = 0;
      const acceptedAfterRevocation: number[] = [];
      const refusedWhileCurrent: number[] = [];
      for (const s of sent) {
        const revocation = rotations[s.generation + 1];
        // (a) Sent after the rotation that replaced its generation resolved: must be refused.
        if (revocation !== undefined && s.sentAt > revocation.resolvedAt) {
          if (s.status === 200) acceptedAfterRevocation.push(s.generation);
          else revokedRefused += 1;
        }
        // (b) Sent after its generation became current, answered before the next rotation was even called.
        const start = rotations[s.generation] as Rotation;
        if (s.sentAt > start.resolvedAt && (revocation === undefined || s.answeredAt < revocation.calledAt)) {
          if (s.status === 200) currentAccepted += 1;
          else refusedWhileCurrent.push(s.generation);
        }
      }
      expect(acceptedAfterRevocation).toEqual([]);
      expect(refusedWhileCurrent).toEqual([]);

      // (d) Not vacuous: the run reached its rotations, and both kinds of request happened many times.
      expect(rotations.length - 1).toBe(ROTATIONS);
      expect({
        revokedRefused: revokedRefused >= ROTATIONS / 2,
        currentAccepted: currentAccepted >= ROTATIONS / 2,
      }).toEqual({
        revokedRefused: true,
        currentAccepted: true,
      });
      reportFigures(`rotation under load (${kind})`, {
        rotations: rotations.length - 1,
        requests: sent.length,
        'old token sent after its revocation: refused': revokedRefused,
        'newest token, current throughout: accepted': currentAccepted,
      });
      // The handler ran exactly once per accepted request: no refused request reached it.
      expect(host.counts.protected).toBe(sent.filter((s) => s.status === 200).length);
    },
    STUCK_MS,
  );
});
