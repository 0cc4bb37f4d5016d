// The settings window's "Automation API" section: the masked token, Show, Copy, and Regenerate token, which says
// what happened in the words regenerateToken() gives. Loaded by index.html; it talks to the main process only
// through `window.automationApi` (preload.ts).
import type { AutomationApi, SettingsView } from './settings-api.js';

declare global {
  interface Window {
    readonly automationApi: AutomationApi;
  }
}

const element = (id: string): HTMLElement => {
  const found = document.getElementById(id);
  if (found === null) throw new Error(`index.html has no #${id}`);
  return found;
};
const token = element('token');
const url = element('url');
const message = element('message');
const showButton = element('show') as HTMLButtonElement;
let shown = false;

function render(view: SettingsView): void {
  shown = false;
  token.textContent = view.masked;
  url.textContent = view.url;
  showButton.textContent = 'Show';
}

showButton.addEventListener('click', async () => {
  shown = !shown;
  token.textContent = shown ? await window.automationApi.show() : (await window.automationApi.view()).masked;
  showButton.textContent = shown ? 'Hide' : 'Show';
});

element('copy').addEventListener('click', async () => {
  await window.automationApi.copy();
  message.textContent = 'Token copied to the clipboard.';
});

element('regenerate').addEventListener('click', async () => {
  if (!confirm('Regenerate the token? Every script that uses the current token stops working at once.')) return;
  const result = await window.automationApi.regenerate();
  if (result.view !== undefined) render(result.view);
  message.textContent = result.message;
});

render(await window.automationApi.view());
