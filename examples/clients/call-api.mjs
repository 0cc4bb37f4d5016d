// Calls a launcher's automation API with its token, from Node (18 or later: fetch is built in).
// LAUNCHER_TOKEN: the token from the launcher's settings; LAUNCHER_URL: the API (default http://127.0.0.1:7878).
const base = process.env.LAUNCHER_URL ?? 'http://127.0.0.1:7878';
// From the environment, not the command line: others see arguments. Pasted with its `Bearer ` prefix, it still works.
const token = process.env.LAUNCHER_TOKEN?.trim().replace(/^bearer\s+/i, '');
if (!token) throw new Error('set LAUNCHER_TOKEN to the token from the launcher\'s settings');

console.log('health:', (await fetch(`${base}/health`)).status);
const answer = await fetch(`${base}/apps`, { headers: { authorization: `Bearer ${token}` } });
if (answer.status === 401) {
  console.error("401: copy the token from the launcher's settings again (was it regenerated?)");
  process.exit(1);
}
if (!answer.ok) throw new Error(`the API answered ${answer.status}`);
console.log(await answer.json());
