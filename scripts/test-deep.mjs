// @ts-check
// `npm run test:deep`: what only CI needs, after `npm test` (test/README.md lists each file's tier and why): the
// simulator's seeds after npm test's, every fault trial and crash run at its full count, the clean install, Redis
// Sentinel and Cluster, several processes, the CLI on Redis; then the browser tests. LAUNCHER_AUTH_DEEP=1 tells
// the tests which tier they are in (test/support/tier.ts). The first step that fails ends the run.
import { spawn } from 'node:child_process';

const STEPS = [
  'vitest run --project deep --project simulation --maxWorkers=4',
  'vitest run --config vitest.browser.config.ts',
];

for (const command of STEPS) {
  console.log(`\n> ${command}`);
  const code = await new Promise((resolve) => {
    const child = spawn(`npx ${command}`, {
      shell: true,
      stdio: 'inherit',
      env: { ...process.env, LAUNCHER_AUTH_DEEP: '1' },
    });
    child.on('error', () => resolve(1));
    child.on('close', (status) => resolve(status ?? 1));
  });
  if (code !== 0) {
    console.error(`\nnpm run test:deep: \`${command}\` failed (exit ${String(code)}).`);
    process.exit(Number(code));
  }
}
