// A per-user state folder of the suite's own, one per test file: RedisSecretStore remembers the newest record it
// trusted in a file there by default (`generationFile`), and no test may write into the home folder of whoever runs
// it, nor share that memory with another file's instances on a reused port and key. Child processes inherit it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const folder = mkdtempSync(join(tmpdir(), 'launcher-auth-state-'));
process.env['XDG_STATE_HOME'] = folder;
process.env['LOCALAPPDATA'] = folder;
afterAll(() => rmSync(folder, { recursive: true, force: true }));
