import { writeFileSync } from 'node:fs';
import { ApiError } from '@rampart/contracts';
import { createOrganization as createAuditedOrganization } from '../services/operators/operators.ts';
import { loadConfig } from '../config.ts';
import { createApiKey, createUser } from '../services/operators/admin.ts';
import { openStore, type Store } from '../store/index.ts';
import { cliActor } from '../services/operators/audit.ts';
import { roleOf } from './list-commands.ts';

export type Command =
  | { cmd: 'org.create'; name: string; trust: number; credits: number; delay: string }
  | { cmd: 'org.grant'; gid: string; coins: number }
  | { cmd: 'org.trust'; gid: string; trust: number }
  | { cmd: 'user.create'; org: string; username: string; role: number; name: string; surname: string }
  | { cmd: 'key.create'; username: string; label: string }
  | { cmd: 'key.revoke'; keyId: string }
  | { cmd: 'migrate' }
  | { cmd: 'openapi'; out?: string }
  | { cmd: 'cdn.refresh'; timeout: number };

function print(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

async function execute(store: Store, c: Command): Promise<void> {
  switch (c.cmd) {
    case 'org.create':
      return print(await createAuditedOrganization(store, cliActor(), { name: c.name, trust: c.trust, credits: c.credits, delay: Number.parseInt(c.delay, 10) || 0 }));
    case 'org.grant': {
      const org = await store.operators.grantCoins(c.gid, c.coins, '', cliActor());
      if (!org) throw new ApiError('not_found', `no organization ${c.gid}`);
      const [credit, debit] = [Number(org.credit_tokens), Number(org.debit_tokens)];
      return print({ gid: org.gid, credit_tokens: credit, debit_tokens: debit, balance: credit - debit });
    }
    case 'org.trust': {
      const was = await store.orgs.byGid(c.gid);
      const org = was && (await store.operators.update(c.gid, { trust: c.trust }, cliActor()));
      if (!was || !org) throw new ApiError('not_found', `no organization ${c.gid}`);
      return print({ gid: org.gid, trust: Number(org.trust), previous_trust: Number(was.trust) });
    }
    case 'user.create': {
      const user = await createUser(store, { orgGid: c.org, username: c.username, role: c.role, name: c.name, surname: c.surname });
      await store.operators.record(cliActor(), { orgId: user.org_id, action: 'user.create', target: user.guid, detail: { username: user.username, role: user.role } });
      return print({ ...user, id: Number(user.id), org_id: Number(user.org_id), role: roleOf(user.role) });
    }
    case 'key.create': {
      const created = await createApiKey(store, { username: c.username, label: c.label });
      const owner = await store.users.byUsername(c.username);
      await store.operators.record(cliActor(), { orgId: owner?.org_id ?? null, action: 'key.create', target: created.keyId, detail: { username: c.username, label: c.label } });
      return print({ key_id: created.keyId, key: created.key, note: 'shown once: store it now' });
    }
    case 'key.revoke': {
      const owner = await store.keys.principal(c.keyId);
      if (!owner || !(await store.keys.revoke(c.keyId))) throw new ApiError('not_found', `no active key ${c.keyId}`);
      await store.operators.record(cliActor(), { orgId: owner.org.id, action: 'key.revoke', target: c.keyId, detail: { username: owner.user.username } });
      return print({ key_id: c.keyId, username: owner.user.username, organization: owner.org.gid, revoked: true });
    }
    case 'migrate':
      return print({ applied: await store.migrate() });
    case 'openapi': {
      // Loaded only here: every other command starts without the HTTP application's code.
      const { buildApp } = await import('../app.ts');
      const app = await buildApp({ config: { ...loadConfig(), logLevel: 'silent', demo: false }, store });
      await app.ready();
      const text = `${JSON.stringify(app.swagger(), null, 2)}\n`;
      await app.close();
      if (c.out) writeFileSync(c.out, text);
      else process.stdout.write(text);
      return;
    }
  }
}

export async function run(c: Command): Promise<void> {
  const config = loadConfig();
  // Needs no store: it only fetches published lists and writes a file under DATA_DIR.
  if (c.cmd === 'cdn.refresh') return print(await (await import('../services/enrichment/cdn-refresh.ts')).refreshCdnRanges({ dataDir: config.dataDir, overrides: config.tools.cdnRefreshSources, timeoutMs: c.timeout }));
  const needsFreshDb = c.cmd === 'openapi';
  const store = await openStore({
    databaseUrl: needsFreshDb ? undefined : config.databaseUrl,
    dataDir: needsFreshDb ? undefined : config.dataDir,
    migrate: c.cmd !== 'migrate',
    owner: 'cli',
  });
  try {
    await execute(store, c);
  } catch (err) {
    if (err instanceof ApiError) throw new Error(err.detail ?? err.code);
    throw err;
  } finally {
    await store.close();
  }
}
