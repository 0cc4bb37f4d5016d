// @ts-check
// attw ("Are the Types Wrong?") on the packed package, profile node16: the types must resolve for `import` and
// `require` in Node and for bundlers. Its table always lists the node10 resolution too, which that profile
// ignores, as "💀 Resolution failed": so a passing run prints one line, and a failing one the whole table.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);
const cli = join(dirname(require.resolve('@arethetypeswrong/cli/package.json')), 'dist/index.js');
/** The package to pack: the repository's (by default) or a workspace's folder, such as packages/redis. */
const folder = process.argv[2] ?? '.';
const run = (/** @type {string[]} */ extra) =>
  spawnSync(process.execPath, [cli, '--pack', folder, '--profile', 'node16', ...extra], { stdio: 'inherit' }).status;

if (run(['--quiet']) === 0) {
  console.log(`attw ${folder}: no problems (types resolve for import and require under node16, and for bundlers)`);
} else {
  // eslint-disable-next-line @typescript-eslint/prefer-nullish-coalescing -- the quiet run failed: even a 0 (or null) from the second one must fail
  process.exitCode = run([]) || 1;
}
