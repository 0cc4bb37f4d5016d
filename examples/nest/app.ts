// A launcher's automation API on NestJS, on the Express or the Fastify platform, guarded by launcher-auth.
// Run: npx tsx --tsconfig examples/nest/tsconfig.json examples/nest/app.ts [express|fastify]
import 'reflect-metadata';
import { Controller, Get, HttpCode, Inject, Module, Param, Post, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { pathToFileURL } from 'node:url';
import { MemorySecretStore, TokenAuthority, type AuthContext } from 'launcher-auth';
import { expressAuth } from 'launcher-auth/express';
import { fastifyAuth } from 'launcher-auth/fastify';
import { Auth } from './auth.ts';

const LAUNCHER = Symbol('launcher');

/** What the controller drives; a real launcher starts processes here. */
export class Launcher {
  readonly running: string[] = [];
  /** API calls served, for the launcher's own log. */
  served = 0;
  list(): string[] {
    this.served += 1;
    return this.running;
  }
  launch(name: string): void {
    this.served += 1;
    this.running.push(name);
  }
}

@Controller()
export class ApiController {
  // An explicit token: esbuild (tsx, Vite) does not emit the constructor's type metadata.
  constructor(@Inject(LAUNCHER) private readonly launcher: Launcher) {}

  /** The health check: open, no @Auth(). */
  @Get('health')
  health(): string {
    return 'ok';
  }

  @Get('apps')
  apps(@Auth() auth: AuthContext): { running: string[]; keyId: string } {
    return { running: this.launcher.list(), keyId: auth.keyId };
  }

  @Post('apps/:name/launch')
  @HttpCode(202)
  launch(@Param('name') name: string, @Auth() auth: AuthContext): { launched: string; keyId: string } {
    this.launcher.launch(name);
    return { launched: name, keyId: auth.keyId };
  }
}

export type Platform = 'express' | 'fastify';

/**
 * A Nest app on `platform` whose every request but `GET /health` needs the token. The adapter is installed on the
 * platform itself, before Nest adds its routes, so unknown routes get the 401 too and Nest never sees a refusal.
 */
export async function createApp(
  platform: Platform,
  authority: TokenAuthority,
  launcher = new Launcher(),
): Promise<INestApplication> {
  @Module({ controllers: [ApiController], providers: [{ provide: LAUNCHER, useValue: launcher }] })
  class AppModule {}

  if (platform === 'fastify') {
    const app = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter(), { logger: false });
    await app.register(fastifyAuth, { authority });
    return app;
  }
  const app = await NestFactory.create(AppModule, { logger: false });
  app.use(expressAuth(authority));
  return app;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const platform = process.argv[2] === 'fastify' ? 'fastify' : 'express';
  const authority = await TokenAuthority.open({ store: new MemorySecretStore() });
  const app = await createApp(platform, authority);
  await app.listen(7878, '127.0.0.1');
  console.log(`Automation API (NestJS on ${platform}) listening on http://127.0.0.1:7878`);
  // The token is shown on purpose: this is the launcher's own terminal, like its settings page.
  console.log(`curl -H "Authorization: Bearer ${authority.issue()}" http://127.0.0.1:7878/apps`);
}
