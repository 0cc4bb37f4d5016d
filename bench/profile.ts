// Where the time of one hot path goes: `npx tsx bench/profile.ts <case> [seconds]` runs that path in a loop in a
// child started with `node --cpu-prof` and prints the frames with the most self time. Not run by `npm run bench`.
// Cases: verify-current, verify-wrong, adapter-current, adapter-wrong, adapter-garbage (adapter = the node
// adapter's listener on a reused stub request, the synchronous path every adapter takes).
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { flag, fromDist, plainStackTraces, runChild, tsxCommand, type LauncherAuth, type LauncherAuthNode } from './common.js';

const CASES = ['verify-current', 'verify-wrong', 'adapter-current', 'adapter-wrong', 'adapter-garbage'] as const;
type Case = (typeof CASES)[number];

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** The loop being profiled; it reports its own ns per call, which includes the profiler's overhead. */
async function loop(which: Case, seconds: number): Promise<{ nsPerCall: number }> {
  const { MemorySecretStore, TokenAuthority } = await fromDist<LauncherAuth>('index');
  const { withAuth } = await fromDist<LauncherAuthNode>('node');
  const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  const current = authority.issue();
  // Another signing input (the claims' first character changed) under a random signature: only the HMAC refuses it.
  const [header = '', payload = ''] = current.split('.');
  const wrong = `${header}.${payload.charAt(0) === 'A' ? 'B' : 'A'}${payload.slice(1)}.${randomBytes(32).toString('base64url')}`;
  const garbage = '#%!*'.repeat(current.length).slice(0, current.length);
  const token = which.endsWith('current') ? current : which.endsWith('wrong') ? wrong : garbage;
  const flat = Buffer.from(token, 'latin1').toString('latin1');
  const listener = withAuth(authority, () => undefined);
  const request = { method: 'GET', url: '/api', rawHeaders: ['Host', '127.0.0.1', 'Authorization', Buffer.from(`Bearer ${token}`, 'latin1').toString('latin1')] } as unknown as IncomingMessage;
  const response = { writeHead: () => response, end: () => undefined } as unknown as ServerResponse;
  const started = performance.now();
  let calls = 0;
  while (performance.now() - started < seconds * 1000) {
    if (which.startsWith('verify')) for (let i = 0; i < 1000; i++) await authority.verify(flat);
    else for (let i = 0; i < 1000; i++) listener(request, response);
    calls += 1000;
  }
  const nsPerCall = ((performance.now() - started) * 1e6) / calls;
  await authority.close();
  return { nsPerCall };
}

/** Self time per frame, highest first, as shares of the samples taken while the loop ran. */
function topFrames(profile: CpuProfile, count: number): string[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map<string, number>();
  let total = 0;
  profile.samples.forEach((id, i) => {
    const frame = byId.get(id)?.callFrame;
    if (frame === undefined) return;
    const file = frame.url.split('/').slice(-2).join('/');
    const key = `${frame.functionName || '(anonymous)'} ${file === '' ? '' : `${file}:${frame.lineNumber + 1}`}`.trim();
    const delta = profile.timeDeltas[i] ?? 0;
    self.set(key, (self.get(key) ?? 0) + delta);
    total += delta;
  });
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, count)
    .map(([key, time]) => `${((100 * time) / total).toFixed(1).padStart(5)}%  ${key}`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const argv = process.argv.slice(2);
  const child = flag(argv, '--child');
  if (child !== undefined) {
    plainStackTraces();
    const { writeFile } = await import('node:fs/promises');
    await writeFile(flag(argv, '--out') as string, JSON.stringify(await loop(child as Case, Number(flag(argv, '--seconds')))));
  } else {
    const which = argv[0] as Case;
    if (!CASES.includes(which)) throw new TypeError(`profile: the case must be one of ${CASES.join(', ')}`);
    const seconds = Number(argv[1] ?? '3');
    const dir = await mkdtemp(join(tmpdir(), 'launcher-auth-profile-'));
    try {
      const out = join(dir, 'result.json');
      const { nsPerCall } = await runChild<{ nsPerCall: number }>(
        tsxCommand('profile.ts', ['--child', which, '--seconds', String(seconds), '--out', out], {
          nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
        }),
        out,
        (seconds + 60) * 1000,
      );
      const file = (await readdir(dir)).find((name) => name.endsWith('.cpuprofile'));
      if (file === undefined) throw new Error('profile: no .cpuprofile written');
      const profile = JSON.parse(await readFile(join(dir, file), 'utf8')) as CpuProfile;
      process.stdout.write(`${which}: ${nsPerCall.toFixed(0)} ns per call under the profiler; top frames by self time (whole process):\n`);
      process.stdout.write(`${topFrames(profile, 15).join('\n')}\n`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }
}
