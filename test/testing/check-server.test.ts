// checkServer against real hosts: the library's adapters pass, deliberately broken hosts fail the right case.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { MemorySecretStore, TokenAuthority } from 'launcher-auth';
import { expressAuth } from 'launcher-auth/express';
import { fastifyAuth } from 'launcher-auth/fastify';
import { withAuth } from 'launcher-auth/node';
import { checkServer, type CheckReport } from 'launcher-auth/testing';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function listen(handler: RequestListener): Promise<string> {
  const server: Server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function authorityWithHistory(): Promise<{ authority: TokenAuthority; previous: string; token: string }> {
  const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  cleanups.push(() => authority.close());
  const previous = authority.issue();
  const token = await authority.rotate();
  return { authority, previous, token };
}

function failed(report: CheckReport): string[] {
  return report.cases.filter((row) => !row.ok).map((row) => row.name);
}

describe('checkServer', () => {
  it('passes against node:http with withAuth, and never puts a token in its report', async () => {
    const { authority, previous, token } = await authorityWithHistory();
    const url = await listen(withAuth(authority, (_req, res) => res.end('ok')));
    const report = await checkServer(url, { token, previous });
    expect(failed(report)).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.cases.length).toBe(12);
    const text = JSON.stringify(report);
    expect(text.includes(token) || text.includes(previous)).toBe(false);
  });

  it('passes against Express and Fastify with their adapters', async () => {
    const { authority, previous, token } = await authorityWithHistory();
    const app = express();
    app.use(expressAuth(authority));
    app.get('/health', (_req, res) => void res.send('ok'));
    app.get('/apps', (_req, res) => void res.json([]));
    const expressUrl = await listen(app);
    expect(failed(await checkServer(expressUrl, { token, previous, path: '/apps' }))).toEqual([]);

    const fastify = Fastify();
    await fastify.register(fastifyAuth, { authority });
    fastify.get('/health', async () => 'ok');
    fastify.get('/apps', async () => []);
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    cleanups.push(() => fastify.close());
    const port = (fastify.server.address() as AddressInfo).port;
    expect(failed(await checkServer(`http://127.0.0.1:${port}`, { token, previous, path: '/apps' }))).toEqual([]);
  });

  it('fails a host whose 401 carries a JSON body', async () => {
    const { authority, token } = await authorityWithHistory();
    const url = await listen(async (req, res) => {
      if (req.url === '/health') return void res.end('ok');
      const result = await authority.authenticate(req.headersDistinct.authorization);
      if (result.ok) return void res.end('ok');
      res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'application/json' });
      res.end('{"error":"unauthorized"}');
    });
    const report = await checkServer(url, { token });
    expect(report.ok).toBe(false);
    const rejected = report.cases.find((row) => row.name === 'GET / without Authorization');
    expect(rejected).toMatchObject({ ok: false, status: 401, bodyLength: 24 });
    expect(report.cases.find((row) => row.name === 'GET / with the current token')?.ok).toBe(true);
  });

  it('fails a host that exempts /health by prefix and for any method', async () => {
    const { authority, token } = await authorityWithHistory();
    const url = await listen(async (req, res) => {
      if ((req.url ?? '').startsWith('/health')) return void res.end('ok');
      const result = await authority.authenticate(req.headersDistinct.authorization);
      if (result.ok) return void res.end('ok');
      res.writeHead(401, { 'www-authenticate': 'Bearer', 'content-length': '0' });
      res.end();
    });
    expect(failed(await checkServer(url, { token }))).toEqual([
      'POST /health without Authorization',
      'GET /health/ without Authorization',
      'GET /healthz without Authorization',
      'GET /health/x without Authorization',
    ]);
  });

  it('fails a host that still accepts the token from before the regeneration', async () => {
    const { previous, token } = await authorityWithHistory();
    const url = await listen((req, res) => {
      const ok = (req.method === 'GET' && req.url === '/health') || [`Bearer ${token}`, `Bearer ${previous}`].includes(req.headers.authorization ?? '');
      res.writeHead(ok ? 200 : 401, { 'www-authenticate': 'Bearer', 'content-length': '0' });
      res.end();
    });
    expect(failed(await checkServer(url, { token, previous }))).toEqual([
      'GET / with the token from before the latest regeneration',
    ]);
  });

  it('reports an unreachable server as failed cases, without throwing', async () => {
    const url = await listen((_req, res) => res.end());
    await cleanups.pop()?.();
    const report = await checkServer(url, { token: 'x.y.z', timeoutMs: 2000 });
    expect(report.ok).toBe(false);
    expect(report.cases.every((row) => !row.ok && row.status === undefined && typeof row.detail === 'string')).toBe(true);
  });

  it('throws a TypeError naming the option for bad options', async () => {
    await expect(checkServer('not a url', { token: 't' })).rejects.toThrow(/baseUrl/);
    await expect(checkServer('http://127.0.0.1:1', { token: '' })).rejects.toThrow(/`token`/);
    await expect(checkServer('http://127.0.0.1:1', { token: 't', path: 'apps' })).rejects.toThrow(/`path`/);
    await expect(checkServer('http://127.0.0.1:1', { token: 't', timeoutMs: 0 })).rejects.toThrow(/`timeoutMs`/);
  });
});
