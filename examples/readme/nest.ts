// NestJS: the adapter goes on the platform before Nest's routes; @Auth() hands a controller the context.
import 'reflect-metadata';
import { Controller, Get, Module, createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { FileSecretStore, TokenAuthority, type AuthContext } from 'launcher-auth';
import { expressAuth } from 'launcher-auth/express';
import { fastifyAuth } from 'launcher-auth/fastify';

const Auth = createParamDecorator(
  (_data: unknown, context: ExecutionContext): AuthContext => context.switchToHttp().getRequest<{ auth: AuthContext }>().auth,
);

@Controller()
class ApiController {
  @Get('health') // open: no @Auth() here
  health(): string {
    return 'ok';
  }

  @Get('apps')
  apps(@Auth() auth: AuthContext): { apps: string[]; keyId: string } {
    return { apps: ['editor', 'terminal'], keyId: auth.keyId };
  }
}

@Module({ controllers: [ApiController] })
class AppModule {}

const authority = await TokenAuthority.open({ store: new FileSecretStore('.data/secret.json') });
if (process.env.NEST_PLATFORM === 'fastify') {
  const app = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter());
  await app.register(fastifyAuth, { authority });
  await app.listen(7878, '127.0.0.1');
} else {
  const app = await NestFactory.create(AppModule);
  app.use(expressAuth(authority));
  await app.listen(7878, '127.0.0.1');
}
