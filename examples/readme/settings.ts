// The settings window's "Automation API" section: the token to show, and "Regenerate token".
import { FileSecretStore, TokenAuthority, regenerateToken, secretPath, tokenView } from 'launcher-auth';

const authority = await TokenAuthority.open({ store: new FileSecretStore(secretPath('my-launcher')) });
const { masked, keyId, state } = tokenView(authority); // and `token`, for Show and Copy
console.log(`Token ${masked} (key ${keyId}): ${state}`); // 'ok' while it works, else why not
// Never throws for a store: `message` to show as is, `token` the one that works (if known), `cause` for the log.
const { outcome, message, cause } = await regenerateToken(authority);
if (cause === undefined) console.log(`${outcome}: ${message}`);
else console.error(`${outcome}: ${message}`, cause); // cause.code, and the store's failure as its cause
await authority.close();
