// Loaded with `--import` into a README snippet that the tests run, so that the snippet runs as written while a
// demo (or anything else) holds the README's port 7878: a server the snippet starts on 7878 listens on a free
// port instead and says which on stderr ("readme-port: listening on <port>"); a connection the snippet opens to
// 7878 goes to the port in LAUNCHER_README_PORT.
import net from 'node:net';

const README_PORT = 7878;

function isReadmePort(value: unknown): boolean {
  return value === README_PORT || value === String(README_PORT);
}

/** Rewrites the port in place wherever listen() and connect() read it (a number first, or an options object). */
function remap(args: unknown[], to: () => number): boolean {
  // net.createConnection passes connect() its arguments already normalized, as one array.
  const list = Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  const first = list[0];
  if (typeof first === 'object' && first !== null && 'port' in first) {
    const options = first;
    if (!isReadmePort(options.port)) return false;
    options.port = to();
    return true;
  }
  if (!isReadmePort(first)) return false;
  list[0] = to();
  return true;
}

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (this: net.Server, ...args: unknown[]) {
  if (remap(args, () => 0)) {
    this.once('listening', () => {
      process.stderr.write(`readme-port: listening on ${(this.address() as net.AddressInfo).port}\n`);
    });
  }
  return Reflect.apply(listen, this, args) as net.Server;
} as typeof listen;

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
  remap(args, () => {
    const port = Number(process.env['LAUNCHER_README_PORT']);
    if (!Number.isInteger(port) || port <= 0 || port > 65_535) {
      throw new Error('readme-port: set LAUNCHER_README_PORT to the port that stands in for 7878');
    }
    return port;
  });
  return Reflect.apply(connect, this, args) as net.Socket;
};
