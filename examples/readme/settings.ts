// The settings window's "Automation API" section: the token to show, and "Regenerate token".
import { FileSecretStore, TokenAuthority, regenerateToken, secretPath, tokenView } from 'launcher-auth';

const authority = await TokenAuthority.open({ store: new FileSecretStore(secretPath('my-launcher')) });
const { masked, keyId } = tokenView(authority); // and `token`, for Show and Copy
console.log(`Token ${masked} (key ${keyId})`);

// Never throws for what the store did: `message` is one sentence to show as is, `token` the one that works now.
const { outcome, message } = await regenerateToken(authority);
console.log(`${outcome}: ${message}`);
await authority.close();
