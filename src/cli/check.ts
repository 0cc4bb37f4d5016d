// `launcher-auth check`: the test table against a live server, and one line instead of a table when the table's
// failures share one cause the user can fix (wrong port, wrong scheme, a path in the base URL).
import { parseArgs } from 'node:util';
import { checkServer, MAX_TIMEOUT_MS, type CheckCase } from '../testing/check-server.js';
import { isLoopback, listenerOwners } from './listener.js';
import { EXIT, UsageError, type CliIo } from './output.js';

/** What checkServer's option names are called on the command line. */
const FLAG_OF: Readonly<Record<string, string>> = {
  baseUrl: '<base-url>',
  path: '--path',
  healthPath: '--health-path',
  timeoutMs: '--timeout',
};

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A token from the command line or the environment; surrounding white space (a newline from a file) dropped.
 * No message quotes the value; the variable's name only when it is one.
 */
function tokenFrom(value: string | undefined, variable: string | undefined, flag: string): string | undefined {
  if (value !== undefined && variable !== undefined)
    throw new UsageError(`give either --${flag} or --${flag}-env, not both.`);
  let token: string | undefined;
  let source = `--${flag}`;
  if (variable !== undefined) {
    if (!ENV_NAME.test(variable)) {
      throw new UsageError(
        `--${flag}-env takes the name of an environment variable that holds the token (such as LAUNCHER_TOKEN), not the token itself.`,
      );
    }
    token = process.env[variable]?.trim();
    if (token === undefined) throw new UsageError(`--${flag}-env: the environment variable ${variable} is not set.`);
    if (token === '') throw new UsageError(`--${flag}-env: the environment variable ${variable} is empty.`);
    source = `the environment variable ${variable}`;
  } else {
    if (value === undefined) return undefined;
    token = value.trim();
    if (token === '') throw new UsageError(`--${flag} must not be empty.`);
  }
  if (/^bearer(?:\s|$)/i.test(token)) {
    throw new UsageError(
      `${source} starts with "Bearer": give the token alone, the check sends "Bearer <token>" itself.`,
    );
  }
  if (/\s/.test(token)) {
    throw new UsageError(`${source} has a space or a line break inside, which no token has: copy the token again.`);
  }
  return token;
}

/** The base URL as a message may show it: no query or fragment (which could hold anything), no trailing slash. */
function shown(base: URL): string {
  return `${base.origin}${base.pathname.replace(/\/+$/, '')}`;
}

/**
 * One line for a report whose failures all have one cause, or `undefined` when the table itself is the answer.
 * Exported for the tests.
 */
export function diagnose(base: URL, cases: readonly CheckCase[]): string | undefined {
  const statuses = cases.map((row) => row.status);
  if (statuses.every((status) => status === undefined)) {
    const why = cases[0]?.detail ?? '';
    if (
      base.protocol === 'https:' &&
      /EPROTO|wrong version number|WRONG_VERSION_NUMBER|packet length too long/.test(why)
    ) {
      return `${base.origin} does not speak TLS: the automation API is plain HTTP on loopback; use http://${base.host}${base.pathname.replace(/\/+$/, '')}.`;
    }
    // One line instead of a table of identical failures; only the first line of a multi-line system message.
    const reason = why.split('\n', 1)[0]?.trim();
    return `nothing answers at ${shown(base)}: is the launcher running?${reason ? ` (${reason})` : ''}`;
  }
  const [first] = statuses;
  if (
    first !== undefined &&
    first !== 401 &&
    (first < 200 || first > 299) &&
    statuses.every((status) => status === first)
  ) {
    const settings = first === 403 ? " (the demo's settings page answers 403 to everyone but its owner's browser)" : '';
    return `every request got ${first}, with the token or without: ${shown(base)} is not the automation API${settings}; give the API's URL (the demo's is http://127.0.0.1:7878).`;
  }
  const prefix = base.pathname.replace(/\/+$/, '');
  const health = cases.find((row) => row.name.startsWith('GET ') && row.expected === 'not 401/403');
  if (
    prefix !== '' &&
    health !== undefined &&
    (health.status === 401 || health.status === 403 || health.status === 404)
  ) {
    const path = health.name.slice('GET '.length, health.name.indexOf(' without'));
    return (
      `GET ${prefix}${path} got ${health.status}: the base URL's path ${prefix} goes before every path checked; ` +
      `give the API's root as <base-url> (${base.origin}) and the protected path as --path ${prefix}.`
    );
  }
  return undefined;
}

/**
 * The line that refuses to send a token to `base`'s port, held by a user other than the caller and root; or
 * `undefined`, after a note on `io` where the port's owner could not be read (not Linux, not a loopback address).
 */
function listenerRefusal(base: URL, io: CliIo): string | undefined {
  const port = Number(base.port === '' ? (base.protocol === 'https:' ? 443 : 80) : base.port);
  const owners = isLoopback(base.hostname) ? listenerOwners(port) : undefined;
  if (owners === undefined) {
    io.stderr(
      `launcher-auth: the owner of port ${port} was not checked (that is done on Linux, for a loopback address): the tokens go to whoever listens there.\n`,
    );
    return undefined;
  }
  const caller = process.getuid?.();
  const other = owners.find((uid) => uid !== caller && uid !== 0);
  if (other === undefined) return undefined;
  return `port ${port} of ${base.hostname} is held by another user (uid ${other}), not by you or root: no token was sent. Is the launcher running?`;
}

export async function checkCommand(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      token: { type: 'string' },
      'token-env': { type: 'string' },
      previous: { type: 'string' },
      'previous-env': { type: 'string' },
      path: { type: 'string' },
      'health-path': { type: 'string' },
      timeout: { type: 'string' },
    },
  });
  if (positionals.length !== 1) throw new UsageError('check takes exactly one <base-url>.');
  const token = tokenFrom(values.token, values['token-env'], 'token');
  if (token === undefined) throw new UsageError('check needs --token <t> or --token-env <NAME>.');
  const previous = tokenFrom(values.previous, values['previous-env'], 'previous');
  const timeoutMs = values.timeout === undefined ? undefined : Number(values.timeout);
  if (timeoutMs !== undefined && (!/^\d+$/.test(values.timeout ?? '') || timeoutMs < 1 || timeoutMs > MAX_TIMEOUT_MS)) {
    throw new UsageError(`--timeout must be a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}.`);
  }
  const baseUrl = positionals[0] as string;
  // A URL that does not parse, or not http(s), is checkServer's to refuse, below.
  const base = URL.canParse(baseUrl) ? new URL(baseUrl) : undefined;
  const refusal = base !== undefined && /^https?:$/.test(base.protocol) ? listenerRefusal(base, io) : undefined;
  if (refusal !== undefined) {
    io.stderr(`launcher-auth: ${refusal}\n`);
    return EXIT.checkFailed;
  }
  let report;
  try {
    report = await checkServer(baseUrl, {
      token,
      ...(previous === undefined ? {} : { previous }),
      ...(values.path === undefined ? {} : { path: values.path }),
      ...(values['health-path'] === undefined ? {} : { healthPath: values['health-path'] }),
      ...(timeoutMs === undefined ? {} : { timeoutMs }),
    });
  } catch (error) {
    if (error instanceof TypeError) {
      const message = error.message
        .replace(/^checkServer: /, '')
        .replace(/`(\w+)`/g, (quoted, name: string) => FLAG_OF[name] ?? quoted);
      throw new UsageError(message);
    }
    throw error;
  }
  // checkServer accepted the URL, so it parses; it refused one with credentials.
  const diagnosis = diagnose(new URL(baseUrl), report.cases);
  if (diagnosis !== undefined) {
    io.stderr(`launcher-auth: ${diagnosis}\n`);
    return EXIT.checkFailed;
  }
  for (const row of report.cases) {
    const seen = row.status === undefined ? 'no answer' : `${row.status}, body ${row.bodyLength} bytes`;
    io.stdout(
      `${row.ok ? 'ok  ' : 'FAIL'}  ${row.name}: expected ${row.expected}; got ${seen}${row.detail === undefined ? '' : ` (${row.detail})`}\n`,
    );
  }
  const failed = report.cases.filter((row) => !row.ok).length;
  io.stdout(`${report.cases.length - failed} passed, ${failed} failed\n`);
  return failed === 0 ? EXIT.ok : EXIT.checkFailed;
}
