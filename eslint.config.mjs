// @ts-check
// typescript-eslint's strict and stylistic type-checked rules everywhere; Prettier owns the layout
// (eslint-config-prettier turns off the rules it would fight). `npm run lint` runs both.
import tseslint from 'typescript-eslint';
import prettier from 'eslint-config-prettier';
import testRules from './scripts/eslint-test-rules.mjs';

/** Linted without types (scripts/lint.mjs hands the typed rules its programs for every other file). */
export const UNTYPED_CONFIGS = ['eslint.config.mjs', 'stryker.config.mjs'];
export const UNTYPED_RECIPES = ['examples/readme/bun-serve.ts', 'examples/readme/deno-serve.ts'];

export default tseslint.config(
  {
    ignores: ['dist/', 'packages/*/dist/', 'bench/.build/', 'node_modules/', 'coverage/', '.stryker-tmp/', 'reports/'],
  },
  ...tseslint.configs.strictTypeChecked,
  ...tseslint.configs.stylisticTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // The library's tsconfig.json and the Electron recipe's (Electron's own types, which `npm ci` takes out of
        // its package).
        project: ['./tsconfig.json', './examples/electron/tsconfig.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },
  {
    rules: {
      // Numbers and booleans print as expected in a message; the rule's point (an object, `undefined`) still holds.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      // `() => void promise` and `(x) => set.delete(x)` as callbacks: the arrow's value is never read.
      '@typescript-eslint/no-confusing-void-expression': [
        'error',
        { ignoreArrowShorthand: true, ignoreVoidOperator: true },
      ],
      // It would turn `x as string` into `x!`, which no-non-null-assertion (strict) forbids.
      '@typescript-eslint/non-nullable-type-assertion-style': 'off',
      // `T[]` for simple types, `Array<readonly [a, b]>` for the rest, as the code writes them.
      '@typescript-eslint/array-type': ['error', { default: 'array-simple' }],
      // The public API checks at run time what its types already exclude: JavaScript callers, a framework's loosely
      // typed request, a header that is not a string. Those checks are the point, not dead code.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      // An async method that never awaits still turns a throw into a rejection, which SecretStore's contract asks.
      '@typescript-eslint/require-await': 'off',
      // `string | RejectReason` says which strings mean failure, though `string` alone would type-check.
      '@typescript-eslint/no-redundant-type-constituents': 'off',
      // A caught error is passed on as it is, whatever it is.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // Header tables are edited by a named constant (`delete headers[HEADER]`), not by input.
      '@typescript-eslint/no-dynamic-delete': 'off',
      // `const { dropped: _dropped, ...kept } = object` leaves a property out.
      // A framework tells an error handler by its arity: `(error, req, res, _next)`.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { varsIgnorePattern: '^_', argsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // `process.env['PORT'] || 3000`: an empty value (`PORT=`) falls back too.
      '@typescript-eslint/prefer-nullish-coalescing': ['error', { ignorePrimitives: { string: true } }],
      'no-control-regex': 'error',
      // `headers['x-request-id']`, `process.env['PORT']`: a lookup in a table reads as one.
      '@typescript-eslint/dot-notation': ['error', { allowIndexSignaturePropertyAccess: true }],
    },
  },
  {
    files: UNTYPED_CONFIGS,
    ...tseslint.configs.disableTypeChecked,
  },
  {
    files: ['test/**', 'bench/**', 'examples/**', 'scripts/**', 'packages/*/test/**', 'packages/*/examples/**'],
    rules: {
      // A test reads what a server sent (parsed JSON, a framework's internals) as it is, and a script the manifests
      // it edits: a wrong shape fails the assertion (or the script) that reads it, which says more than a type guard.
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // `value!` where a missing value fails the test (or the benchmark) at once.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // `expect(object.method)`, handlers handed to a framework: the method is never called unbound by the test.
      '@typescript-eslint/unbound-method': 'off',
      // Stubs and no-op listeners are the point of many fixtures.
      '@typescript-eslint/no-empty-function': 'off',
      // Node's and the frameworks' callbacks take async handlers whose promise the test awaits otherwise.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      // `() => server.close()`-style shorthands in fixtures.
      '@typescript-eslint/no-confusing-void-expression': 'off',
      '@typescript-eslint/no-meaningless-void-operator': 'off',
    },
  },
  {
    files: ['test/**', 'packages/*/test/**'],
    rules: {
      // Look-alikes are what some tests hand to the code on purpose: a stub request, an error from another copy of
      // the package.
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
      // Tokens and headers are ASCII: spreading one into characters is how the mutation tests edit it.
      '@typescript-eslint/no-misused-spread': 'off',
    },
  },
  {
    // The rules test/README.md states (scripts/eslint-test-rules.mjs). test/support/ holds the one polling helper and
    // the suite's deadlines; packages/*/test/sim/ runs on simulated time; the soak is a run of its own, timed by design; a
    // fixture is a program a test starts, whose loop runs until the test kills it.
    files: ['test/**/*.ts', 'packages/*/test/**/*.ts'],
    ignores: [
      'test/support/**',
      'test/soak/**',
      'test/**/fixtures/**',
      'packages/*/test/sim/**',
      'packages/*/test/fixtures/**',
    ],
    plugins: { 'launcher-auth-tests': testRules },
    rules: {
      'launcher-auth-tests/no-wall-clock-wait': 'error',
      'launcher-auth-tests/no-token-identity': 'error',
      'launcher-auth-tests/no-polling-loop': 'error',
    },
  },
  {
    plugins: { 'launcher-auth-tests': testRules },
    rules: { 'launcher-auth-tests/disable-reason': 'error' },
  },
  {
    files: ['examples/nest/**', 'test/nest/**', 'examples/readme/nest-express.ts', 'examples/readme/nest-fastify.ts'],
    rules: {
      // A NestJS module is a decorated class without members.
      '@typescript-eslint/no-extraneous-class': 'off',
      // Nest types its options objects as classes; an object literal is how its documentation passes them.
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
    },
  },
  {
    files: ['examples/readme/**', 'examples/clients/**'],
    rules: {
      // README snippets, shown as they are: CommonJS `require()` is the point of commonjs.cjs, and a top-level
      // call's rejection is Node's to report.
      '@typescript-eslint/no-require-imports': 'off',
      '@typescript-eslint/no-floating-promises': 'off',
      // Plain JavaScript clients: their values are untyped.
      '@typescript-eslint/restrict-plus-operands': 'off',
    },
  },
  {
    files: ['src/stores/file/store.ts'],
    // A private sentinel symbol, thrown and caught inside the same save, marks an abort between its steps.
    rules: { '@typescript-eslint/only-throw-error': 'off' },
  },
  {
    // Last, so that no later block turns a typed rule back on. The Bun.serve and Deno.serve recipes use their runtime's globals, which tsc does not know: Deno checks its own
    // (`deno check` in the runtime tests), Bun runs its own.
    files: UNTYPED_RECIPES,
    ...tseslint.configs.disableTypeChecked,
  },
  prettier,
);
