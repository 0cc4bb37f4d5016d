// Loaded with `--import` into a README snippet that the tests run: the README's port 7878 (the demo's) becomes
// the port in LAUNCHER_README_PORT, both where the snippet listens and where it connects, so that the snippet
// runs as written while a demo (or anything else) holds 7878.
import net from 'node:net';

const README_PORT = 7878;
const port = Number(process.env['LAUNCHER_README_PORT']);
if (!Number.isInteger(port) || port <= 0 || port > 65_535) {
  throw new Error('readme-port: set LAUNCHER_README_PORT to the port that stands in for 7878');
}

function mapped(value: unknown): unknown {
  return value === README_PORT || value === String(README_PORT) ? port : value;
}

/** Rewrites the port in place wherever listen() and connect() read it: a number first, or an options object. */
function remap(args: unknown[]): void {
  // net.createConnection passes connect() its arguments already normalized, as one array.
  const list = Array.isArray(args[0]) ? (args[0] as unknown[]) : args;
  const first = list[0];
  if (typeof first === 'object' && first !== null && 'port' in first) {
    (first as { port: unknown }).port = mapped((first as { port: unknown }).port);
  } else {
    list[0] = mapped(first);
  }
}

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (this: net.Server, ...args: unknown[]) {
  remap(args);
  return Reflect.apply(listen, this, args) as net.Server;
} as typeof listen;

const connect = net.Socket.prototype.connect;
net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
  remap(args);
  return Reflect.apply(connect, this, args) as net.Socket;
} as typeof connect;
