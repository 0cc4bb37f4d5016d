// The part of Electron's API that examples/electron-safe-storage.ts uses, declared here so that the example
// typechecks without installing Electron (whose install script downloads its binary from outside the npm registry).
// Signatures as in Electron's own electron.d.ts (`app.getPath`, `safeStorage`); a launcher built on Electron
// uses Electron's real types instead of this file.
declare module 'electron' {
  export const app: {
    getPath(
      name:
        | 'home'
        | 'appData'
        | 'userData'
        | 'sessionData'
        | 'temp'
        | 'exe'
        | 'module'
        | 'desktop'
        | 'documents'
        | 'downloads'
        | 'music'
        | 'pictures'
        | 'videos'
        | 'recent'
        | 'logs'
        | 'crashDumps',
    ): string;
    whenReady(): Promise<void>;
  };
  export const safeStorage: {
    isEncryptionAvailable(): boolean;
    encryptString(plainText: string): Buffer;
    decryptString(encrypted: Buffer): string;
    getSelectedStorageBackend(): 'basic_text' | 'gnome_libsecret' | 'kwallet' | 'kwallet5' | 'kwallet6' | 'unknown';
  };
}
