// launcher-auth/redis: RedisSecretStore (filled in below).
export {};
