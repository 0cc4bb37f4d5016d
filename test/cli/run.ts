// Runs the launcher-auth command in-process through main(), for the CLI's test files.
import { main } from '../../src/cli/main.js';

/** Anything shaped like a JWT. */
export const JWT_SHAPED = /[\w-]{10,}\.[\w-]{10,}\.[\w-]{10,}/g;

/**
 * What a command printed, with every JWT-shaped string replaced by `<token>`, so that a failing assertion
 * never prints a token; `raw()` gives the exact text, for comparisons that end in a boolean.
 */
export interface CliResult {
  code: number;
  out: string;
  err: string;
  raw(): { out: string; err: string };
}

export async function runCli(...argv: string[]): Promise<CliResult> {
  let out = '';
  let err = '';
  const code = await main(argv, { stdout: (text) => void (out += text), stderr: (text) => void (err += text) });
  const redact = (text: string): string => text.replace(JWT_SHAPED, '<token>');
  return { code, out: redact(out), err: redact(err), raw: () => ({ out, err }) };
}
