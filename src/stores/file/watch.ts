// Watching the secret file for a replacement by another process (a second launcher, the CLI).
import { watch as watchPath, watchFile, unwatchFile, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

/**
 * Calls `onChange` when the file at `path` may have changed; returns the function that stops watching. Watches
 * the folder, falling back to polling the file every `interval` ms where the platform cannot report changes.
 */
export function watchSecretFile(path: string, interval: number, onChange: () => void): () => void {
  const name = basename(path);
  let watcher: FSWatcher | undefined;
  let polling = false;
  const poll = (): void => onChange();
  const startPolling = (): void => {
    watcher?.close();
    watcher = undefined;
    if (polling) return;
    polling = true;
    watchFile(path, { persistent: false, interval }, poll);
  };
  const directory = dirname(path);
  const directoryName = basename(directory);
  try {
    // The directory, not the file: a save replaces the file, and a watch on the old inode would go quiet.
    watcher = watchPath(directory, { persistent: false }, (_event, filename) => {
      if (filename === null || filename === name) {
        onChange();
      } else if (filename === directoryName) {
        // Linux reports the removal or move of the watched directory itself under the directory's own name,
        // and then nothing more, not even when the directory comes back (no 'error' either): poll the file
        // from now on. A file in the directory that bears the directory's name costs the same, harmlessly.
        startPolling();
        onChange();
      }
    });
    // The directory went away or cannot be watched any more: fall back to polling the file.
    watcher.on('error', startPolling);
  } catch {
    startPolling();
  }
  return () => {
    watcher?.close();
    watcher = undefined;
    if (polling) unwatchFile(path, poll);
    polling = false;
  };
}
