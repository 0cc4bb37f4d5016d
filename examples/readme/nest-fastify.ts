// NestJS on Fastify: npm install launcher-auth @nestjs/core @nestjs/common @nestjs/platform-fastify fastify
// reflect-metadata rxjs. fastifyAuth is registered on Fastify before Nest's routes.
import 'reflect-metadata';
import { Controller, Get, Module, createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import { FileSecretStore, TokenAuthority, secretPath, type AuthContext } from 'launcher-auth';
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

const authority = await TokenAuthority.open({ store: new FileSecretStore(secretPath('my-launcher')) });
const app = await NestFactory.create<NestFastifyApplication>(AppModule, new FastifyAdapter());
await app.register(fastifyAuth, { authority });
await app.listen(Number(process.env.PORT ?? 0), '127.0.0.1'); // PORT unset: any free port
console.log(`curl -H "Authorization: Bearer ${authority.issue()}" ${await app.getUrl()}/apps`);
