// NestJS on Express: npm install launcher-auth @nestjs/core @nestjs/common @nestjs/platform-express reflect-metadata
// rxjs, and for TypeScript @types/express (without it tsc stops at TS7016). expressAuth goes before Nest's routes.
import 'reflect-metadata';
import { Controller, Get, Module, createParamDecorator, type ExecutionContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { FileSecretStore, TokenAuthority, secretPath, type AuthContext } from 'launcher-auth';
import { expressAuth } from 'launcher-auth/express';

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
const app = await NestFactory.create<NestExpressApplication>(AppModule);
app.use(expressAuth(authority));
await app.listen(Number(process.env.PORT ?? 0), '127.0.0.1'); // PORT unset: any free port
console.log(`curl -H "Authorization: Bearer ${authority.issue()}" ${await app.getUrl()}/apps`);
