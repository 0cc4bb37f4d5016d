// The settings window's preload: exposes the four calls of settings-api.ts, and nothing else of IPC, to the page
// (contextIsolation keeps the page away from ipcRenderer itself). Built to preload.cjs: a sandboxed preload is
// CommonJS.
import { contextBridge, ipcRenderer } from 'electron';
import { CHANNELS, type AutomationApi } from './settings-api.js';

const automationApi: AutomationApi = {
  view: () => ipcRenderer.invoke(CHANNELS.view),
  show: () => ipcRenderer.invoke(CHANNELS.show),
  copy: () => ipcRenderer.invoke(CHANNELS.copy),
  regenerate: () => ipcRenderer.invoke(CHANNELS.regenerate),
};

contextBridge.exposeInMainWorld('automationApi', automationApi);
