// @ts-check
// `npm pack` and `npm publish` ship package.json without the scripts that would run when the package is installed
// (`prepare` builds a clone of the repository on `npm ci`; an installed package is already built) and without the
// `launcher-auth-source` condition of `exports` (the sources are not published). `prepack` runs
// `strip`; `postpack` runs `restore`, which puts back the repository's package.json byte for byte, except under
// `npm publish`, which reads package.json again after packing to send it to the registry: `postpublish` restores.
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { SOURCE_CONDITION } from './entries.mjs';

const MANIFEST = 'package.json';
/** Beside the manifest, where `files` keeps it out of the package; git ignores it. */
const SAVED = '.package.json.before-pack';
const INSTALL_TIME = ['preinstall', 'install', 'postinstall', 'prepare', 'preprepare', 'postprepare'];

/**
 * Writes `text` to `path` in one rename, so that no reader ever sees half a file.
 * @param {string} path
 * @param {string} text
 */
function replace(path, text) {
  writeFileSync(`${path}.tmp`, text);
  renameSync(`${path}.tmp`, path);
}

const command = process.argv[2];
if (command === 'strip') {
  // A fresh clone has neither the tools nor dist/: one line that says what to do, not a stack trace.
  if (!existsSync('dist')) {
    console.error('launcher-auth: run `npm ci` first (it installs the tools and builds dist/), then `npm pack` again.');
    process.exit(1);
  }
  // A pack that stopped before its postpack left the stripped file behind: the saved one is the original.
  const original = existsSync(SAVED) ? readFileSync(SAVED, 'utf8') : readFileSync(MANIFEST, 'utf8');
  replace(SAVED, original);
  const manifest = JSON.parse(original);
  for (const name of INSTALL_TIME) delete manifest.scripts?.[name];
  // The sources are not published: the condition that names them would point at nothing.
  for (const target of Object.values(manifest.exports ?? {})) {
    if (typeof target === 'object' && target !== null) delete target[SOURCE_CONDITION];
  }
  replace(MANIFEST, `${JSON.stringify(manifest, null, 2)}\n`);
} else if (command === 'restore') {
  if (process.env['npm_command'] === 'publish' && process.env['npm_lifecycle_event'] === 'postpack') process.exit(0);
  if (existsSync(SAVED)) renameSync(SAVED, MANIFEST);
} else {
  console.error('usage: node scripts/pack-manifest.mjs strip|restore');
  process.exit(2);
}
