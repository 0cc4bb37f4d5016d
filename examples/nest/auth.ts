// The NestJS side of launcher-auth: a parameter decorator that hands a controller the request's AuthContext.
// The token itself is checked before Nest's router by the platform's adapter (see app.ts), so a refused request
// never reaches Nest: the 401 stays empty, whatever Nest's exception filters would write.
import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { AuthContext } from 'launcher-auth';

/**
 * `@Auth() auth: AuthContext` in a controller method: the context that `expressAuth` (Express platform) or
 * `fastifyAuth` (Fastify platform) attached to the request. Not for the health route, which has none.
 */
export const Auth = createParamDecorator((_data: unknown, context: ExecutionContext): AuthContext => {
  const auth = context.switchToHttp().getRequest<{ auth?: AuthContext }>().auth;
  // Only a wiring mistake gets here (no adapter before the routes, or @Auth() on the health route).
  if (auth === undefined)
    throw new Error('@Auth(): no AuthContext on the request; install the launcher-auth adapter first');
  return auth;
});
