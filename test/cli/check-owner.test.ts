// launcher-auth check with the launcher down and another local user listening on its port: no token is sent.
import { connect } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { MemorySecretStore, TokenAuthority } from 'launcher-auth';
import { EXIT } from '../../src/cli/main.js';
import { killGroup, spawnOwned } from '../support/children.js';
import { OTHER_USER_MISSING, otherUser } from '../support/other-user.js';
import { until } from '../support/poll.js';
import { runCli } from './run.js';

/** A listener that prints its port, then `accept <n>` for each connection in order and `mark <n>` when one says MARK. */
const LISTENER = `
const server = require('node:net').createServer((socket) => {
  const n = ++accepted;
  console.log('accept ' + n);
  socket.on('data', (data) => { if (data.toString('latin1').startsWith('MARK')) console.log('mark ' + n); });
  socket.on('error', () => {});
});
let accepted = 0;
server.listen(0, '127.0.0.1', () => console.log('port ' + server.address().port));
`;

describe.skipIf(OTHER_USER_MISSING !== undefined)('launcher-auth check and the port of another user', () => {
  it('refuses in one line, and the listener another user owns receives no connection', async () => {
    const { uid, gid } = otherUser();
    const child = spawnOwned(process.execPath, ['-e', LISTENER], { uid, gid, cwd: '/', stdio: 'pipe' });
    onTestFinished(() => killGroup(child));
    let printed = '';
    child.stdout.on('data', (data: Buffer) => void (printed += data.toString('utf8')));
    expect(await until(() => /^port \d+$/m.test(printed))).toBe(true);
    const port = Number(/^port (\d+)$/m.exec(printed)?.[1]);

    const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
    onTestFinished(() => authority.close());
    const token = authority.issue();
    await authority.rotate();
    const result = await runCli('check', `http://127.0.0.1:${port}`, '--token', authority.issue(), '--previous', token);
    expect(result).toMatchObject({
      code: EXIT.checkFailed,
      out: '',
      err: `launcher-auth: port ${port} of 127.0.0.1 is held by another user (uid ${uid}), not by you or root: no token was sent. Is the launcher running?\n`,
    });

    // A connection of ours after the command: the first the listener accepts, so the command made none before it.
    const socket = connect(port, '127.0.0.1', () => socket.write('MARK'));
    onTestFinished(() => void socket.destroy());
    expect(await until(() => /^mark \d+$/m.test(printed))).toBe(true);
    expect(printed.match(/^(?:accept|mark) \d+$/gm)).toEqual(['accept 1', 'mark 1']);
  });
});
