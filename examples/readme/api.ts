// The core API, in outline (the package's own declarations are type-tested against this outline).
import type { JWTPayload, TokenAuthorityOptions } from 'launcher-auth';

export declare class TokenAuthority {
  static open(options: TokenAuthorityOptions): Promise<TokenAuthority>;
  issue(): string;                 // the current token; the same string until the next rotate()
  rotate(): Promise<string>;       // "Regenerate token": resolves with the new token
  verify(token: string): Promise<VerifyResult>;
  authenticate(authorization: string | readonly string[] | undefined): Promise<VerifyResult>;
  onRotate(listener: (event: { keyId: string; previousKeyId: string }) => void): () => void;
  close(): Promise<void>;
  readonly keyId: string;          // the current key's id (the token's kid); not secret
}
export type VerifyResult =
  | { ok: true; claims: JWTPayload; keyId: string; signal: AbortSignal }
  | { ok: false; reason: 'missing' | 'malformed' | 'invalid' | 'rotated' | 'suspended' };
