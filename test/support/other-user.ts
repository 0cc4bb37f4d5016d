// Another local user, for the tests that play one (another user's listener, another user's plants in a shared
// folder): created with useradd when the tests run as root, as in CI. Without root the suites are skipped with the
// reason, and fail instead under LAUNCHER_AUTH_REQUIRE_SERVICES=1.
import { spawnSync } from 'node:child_process';

export interface OtherUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
}

const NAME = 'launcher-auth-other';
const REQUIRED = process.env['LAUNCHER_AUTH_REQUIRE_SERVICES'] === '1';

function idOf(flag: '-u' | '-g'): number | undefined {
  const found = spawnSync('id', [flag, NAME], { encoding: 'utf8' });
  return found.status === 0 ? Number(found.stdout.trim()) : undefined;
}

function created(): OtherUser | string {
  if (process.platform === 'win32' || process.getuid?.() !== 0) return 'creating another local user needs root';
  if (idOf('-u') === undefined) {
    // A system user without a home or a shell; kept afterwards, so that another file or run reuses it.
    const made = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', NAME], {
      encoding: 'utf8',
    });
    // Another test file may have created it at the same moment: only its absence afterwards is a failure.
    if (made.error !== undefined && idOf('-u') === undefined) return `useradd is not available (${made.error.message})`;
  }
  const [uid, gid] = [idOf('-u'), idOf('-g')];
  if (uid === undefined || gid === undefined) return `useradd could not create the user ${NAME}`;
  return { name: NAME, uid, gid };
}

const OTHER = created();
if (typeof OTHER === 'string' && REQUIRED) {
  throw new Error(`${OTHER}, and LAUNCHER_AUTH_REQUIRE_SERVICES=1 requires another local user.`);
}
if (typeof OTHER === 'string') console.warn(`Skipping the tests that play another local user: ${OTHER}.`);

/** Why the suites that play another local user are skipped, or `undefined` when they run. */
export const OTHER_USER_MISSING: string | undefined = typeof OTHER === 'string' ? OTHER : undefined;

/** The other local user; only inside a suite skipped on {@link OTHER_USER_MISSING}. */
export function otherUser(): OtherUser {
  if (typeof OTHER === 'string') throw new Error(OTHER);
  return OTHER;
}
