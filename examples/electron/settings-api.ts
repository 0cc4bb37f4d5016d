// What the settings window may ask the main process, over IPC: the one contract between main.ts, preload.ts and
// renderer.ts. The token crosses to the window only when the user presses Show; Copy happens in the main process.
import type { RegenerateOutcome } from 'launcher-auth';

export const CHANNELS = {
  view: 'automation-api:view',
  show: 'automation-api:show',
  copy: 'automation-api:copy',
  regenerate: 'automation-api:regenerate',
} as const;

/** What the section shows without the token: its masked form, the key id and the API's address. */
export interface SettingsView {
  readonly masked: string;
  readonly keyId: string;
  readonly url: string;
}

/** What "Regenerate token" tells the window: the outcome, the sentence to show, and the new view (if any). */
export interface RegenerateView {
  readonly outcome: RegenerateOutcome;
  readonly message: string;
  readonly view: SettingsView | undefined;
}

/** What preload.ts exposes to the window as `window.automationApi`. */
export interface AutomationApi {
  view(): Promise<SettingsView>;
  /** The token itself, for Show. */
  show(): Promise<string>;
  /** Copies the token to the clipboard in the main process: the window never needs it for Copy. */
  copy(): Promise<void>;
  regenerate(): Promise<RegenerateView>;
}
