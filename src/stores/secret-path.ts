// Where a launcher keeps its secret file: the user's own configuration folder, as each platform names it, so that
// the file does not depend on the directory the launcher was started from.
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/** A name that is one folder: no separator, not `.` or `..`, nothing a path could be steered with. */
const FOLDER_NAME = /^(?!\.{1,2}$)[^/\\\0]+$/;

/**
 * The path of `fileName` in `app`'s folder under the user's configuration folder: `%APPDATA%\<app>\` on Windows,
 * `~/Library/Application Support/<app>/` on macOS, `$XDG_CONFIG_HOME/<app>/` elsewhere (`~/.config/<app>/` when
 * `XDG_CONFIG_HOME` is unset, empty or relative). Electron's `app.getPath('userData')` is the same folder.
 * `FileSecretStore` makes the folder 0700 and the file 0600 on first use.
 * @param app - the launcher's folder name, e.g. `'my-launcher'`.
 * @param fileName - @default 'secret.json'
 * @throws TypeError when `app` or `fileName` is not one folder or file name.
 */
export function secretPath(app: string, fileName = 'secret.json'): string {
  if (typeof app !== 'string' || !FOLDER_NAME.test(app)) {
    throw new TypeError('secretPath: `app` must be a folder name (no slash, not "." or "..").');
  }
  if (typeof fileName !== 'string' || !FOLDER_NAME.test(fileName)) {
    throw new TypeError('secretPath: `fileName` must be a file name (no slash, not "." or "..").');
  }
  // Each platform reads its own variable only: Deno's --allow-env then needs just that one.
  if (process.platform === 'win32') {
    const APPDATA = process.env['APPDATA'];
    const appData = APPDATA !== undefined && isAbsolute(APPDATA) ? APPDATA : join(homedir(), 'AppData', 'Roaming');
    return join(appData, app, fileName);
  }
  if (process.platform === 'darwin') return join(homedir(), 'Library', 'Application Support', app, fileName);
  const XDG_CONFIG_HOME = process.env['XDG_CONFIG_HOME'];
  const xdg =
    XDG_CONFIG_HOME !== undefined && isAbsolute(XDG_CONFIG_HOME) ? XDG_CONFIG_HOME : join(homedir(), '.config');
  return join(xdg, app, fileName);
}
