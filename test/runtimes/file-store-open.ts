// Run by deno-file-store.test.ts on Deno: opens a FileSecretStore in the folder given, prints "opened" or the
// error's code and message (which never hold a key).
import process from 'node:process';
import { join } from 'node:path';
import { FileSecretStore, TokenAuthority, isLauncherAuthError } from '../../src/index.ts';

const folder = process.argv[2] ?? '.';
try {
  const authority = await TokenAuthority.open({ store: new FileSecretStore(join(folder, 'secret.json')) });
  await authority.close();
  console.log('opened');
} catch (error) {
  console.log(
    `${isLauncherAuthError(error) ? error.code : 'other'}: ${error instanceof Error ? error.message : String(error)}`,
  );
}
