// In your own test suite: check your server's wiring and your own secret store against the contract.
import { MemorySecretStore, TokenAuthority } from 'launcher-auth';
import { checkSecretStore, checkServer } from 'launcher-auth/testing';

const authority = await TokenAuthority.open({ store: new MemorySecretStore() }); // your launcher's authority
const previous = authority.issue();
const token = await authority.rotate();
// ... start your automation API with `authority` on port 7878, then:
const report = await checkServer('http://127.0.0.1:7878', { token, previous, path: '/apps' });
const storeReport = await checkSecretStore(() => new MemorySecretStore()); // () => new YourStore()
for (const row of [...report.cases, ...storeReport.cases]) {
  console.log(row.ok ? `ok    ${row.name}` : `FAIL  ${row.name}: ${row.detail}`); // detail: why it failed
}
await authority.close();
process.exitCode = report.ok && storeReport.ok ? 0 : 1; // non-zero when any case failed
