// Where the time of one hot path goes: `npm run bench -- --profile <case> [--seconds S]` runs that path in a loop in a
// child started with `node --cpu-prof` and prints the frames with the most self time. Not part of the benchmark run.
// Cases: verify-current, verify-wrong, adapter-current, adapter-wrong, adapter-previous, adapter-garbage (adapter =
// the node adapter's listener on a reused stub request, the synchronous path every adapter takes; wrong = another
// signing input under a random signature, refused by the HMAC).
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  exitWithParent,
  flag,
  fromBuild,
  plainStackTraces,
  requireFlag,
  runChild,
  tsxCommand,
  type LauncherAuth,
  type LauncherAuthNode,
} from './common.js';

export const PROFILE_CASES = [
  'verify-current',
  'verify-wrong',
  'adapter-current',
  'adapter-wrong',
  'adapter-previous',
  'adapter-garbage',
] as const;
export type ProfileCase = (typeof PROFILE_CASES)[number];

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: { functionName: string; url: string; lineNumber: number } }>;
  samples: number[];
  timeDeltas: number[];
}

/** The loop being profiled; it reports its own ns per call, which includes the profiler's overhead. */
async function loop(which: ProfileCase, seconds: number): Promise<{ nsPerCall: number }> {
  const { MemorySecretStore, TokenAuthority } = await fromBuild<LauncherAuth>('index');
  const { withAuth } = await fromBuild<LauncherAuthNode>('node');
  const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  const previous = authority.issue();
  const current = await authority.rotate();
  // Another signing input (the claims' first character changed) under a random signature: only the HMAC refuses it.
  const [header = '', payload = ''] = current.split('.');
  const wrong = `${header}.${payload.startsWith('A') ? 'B' : 'A'}${payload.slice(1)}.${randomBytes(32).toString('base64url')}`;
  const garbage = '#%!*'.repeat(current.length).slice(0, current.length);
  const tokens: Record<string, string> = { current, wrong, previous, garbage };
  const token = tokens[which.slice(which.indexOf('-') + 1)] as string;
  // Flat one-byte strings, as the HTTP parser hands a header over.
  const flat = Buffer.from(token, 'latin1').toString('latin1');
  const authorization = Buffer.from(`Bearer ${token}`, 'latin1').toString('latin1');
  const listener = withAuth(authority, () => undefined);
  const request = {
    method: 'GET',
    url: '/api',
    rawHeaders: ['Host', '127.0.0.1', 'Authorization', authorization],
  } as unknown as IncomingMessage;
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

/** Profiles one case in a child for `seconds` and returns the report: ns per call and the top frames. */
export async function runProfile(which: ProfileCase, seconds: number): Promise<string> {
  if (!(seconds >= 1 && seconds <= 60)) throw new TypeError('--seconds must be from 1 to 60');
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
    return [
      `${which}: ${nsPerCall.toFixed(0)} ns per call under the profiler; top frames by self time (whole process):`,
      ...topFrames(profile, 15),
    ].join('\n');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  exitWithParent();
  plainStackTraces();
  const argv = process.argv.slice(2);
  const which = requireFlag(argv, '--child') as ProfileCase;
  await writeFile(
    requireFlag(argv, '--out'),
    JSON.stringify(await loop(which, Number(flag(argv, '--seconds') ?? '3'))),
  );
}
