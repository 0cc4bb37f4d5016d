// @ts-check
// `npm run lint`: the type check and typed ESLint on one TypeScript program per tsconfig, built once and shared
// (ESLint would otherwise build its own: the same files parsed and checked twice), then Prettier and the check that
// package.json's entry points and tsconfig's paths agree. Every step runs; the exit code is 1 if any failed.
import { spawnSync } from 'node:child_process';
import { ESLint } from 'eslint';
import ts from 'typescript';
import { UNTYPED_CONFIGS, UNTYPED_RECIPES } from '../eslint.config.mjs';

/** The library's tsconfig.json and the Electron recipe's (Electron's own types, which `npm ci` takes out of its package). */
const CONFIGS = ['tsconfig.json', 'examples/electron/tsconfig.json'];

let failed = false;
const run = (/** @type {string} */ command, /** @type {string[]} */ args) => {
  const { status } = spawnSync(command, args, { stdio: 'inherit' });
  if (status !== 0) failed = true;
  return status === 0;
};

const host = {
  getCanonicalFileName: (/** @type {string} */ name) => name,
  getCurrentDirectory: ts.sys.getCurrentDirectory,
  getNewLine: () => ts.sys.newLine,
};
const report = (/** @type {readonly ts.Diagnostic[]} */ diagnostics) => {
  if (diagnostics.length === 0) return;
  failed = true;
  process.stdout.write(ts.formatDiagnosticsWithColorAndContext(diagnostics, host));
};

/** The program of `config`, with parent nodes set (typed ESLint rules walk them). */
function programOf(/** @type {string} */ config) {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    config,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => report([diagnostic]),
    },
  );
  if (parsed === undefined) return undefined;
  return ts.createProgram({
    rootNames: parsed.fileNames,
    options: parsed.options,
    host: ts.createCompilerHost(parsed.options, true),
    configFileParsingDiagnostics: ts.getConfigFileParsingDiagnostics(parsed),
  });
}

// The Electron types come out of the electron package at `npm ci`; without them, say so in one line.
if (run(process.execPath, ['scripts/electron-types.mjs', '--check'])) {
  const programs = CONFIGS.map(programOf).filter((program) => program !== undefined);
  for (const program of programs) report(ts.getPreEmitDiagnostics(program));
  // ESLint's cache keys on the configuration as JSON: the programs stand there as their tsconfig paths.
  Object.defineProperty(programs, 'toJSON', { value: () => CONFIGS });

  const eslint = new ESLint({
    cache: true,
    cacheStrategy: 'content',
    cacheLocation: 'node_modules/.cache/eslint/',
    // The files that eslint.config.mjs lints without types stay so.
    overrideConfig: [
      {
        ignores: [...UNTYPED_CONFIGS, ...UNTYPED_RECIPES],
        languageOptions: { parserOptions: { programs } },
      },
    ],
  });
  const results = await eslint.lintFiles(['.']);
  const formatter = await eslint.loadFormatter('stylish');
  const text = await formatter.format(results);
  if (text !== '') process.stdout.write(text);
  if (results.some((result) => result.errorCount > 0)) failed = true;
}
run(process.execPath, ['node_modules/prettier/bin/prettier.cjs', '--check', '--cache', '.']);
run(process.execPath, ['scripts/entries.mjs']);
process.exitCode = failed ? 1 : 0;
