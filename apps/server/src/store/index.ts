import type { Db } from './db.ts';
import { migrate } from './migrate.ts';
import type { LockOwner } from './data-dir-lock.ts';
import { OrganizationStore } from './organizations.ts';
import { UserStore } from './users.ts';
import { ApiKeyStore } from './api-keys.ts';
import { Ipv4Store } from './ipv4.ts';
import { SettingsStore } from './settings.ts';
import { AgentStore } from './agents.ts';
import { SecretStore } from './secrets.ts';
import { FileStore } from './files.ts';
import { NamedIndicatorStore } from './named-indicators.ts';
import { VpnStore } from './vpn.ts';
import { BrowseStore } from './browse.ts';
import { WhyStore } from './why.ts';
import { OperatorStore } from './operators.ts';

export type { Db, Queryable, Transaction, QueryResult } from './db.ts';
export type { Organization } from './organizations.ts';
export type { UserRow } from './users.ts';
export type { ApiKeyRow, KeyPrincipal } from './api-keys.ts';
export type { Ipv4Row } from './ipv4.ts';
export type { AuditEntry } from './settings.ts';
export type { CheckinVia, AgentRow, AgentTokenRow, AgentTokenPrincipal, EnforcedEntry } from './agents.ts';
export type { FileRow, DigestKind } from './files.ts';
export type { NamedRow } from './named-indicators.ts';
export type { VpnLicenseRow } from './vpn.ts';
export type { ReporterRow, DecisionOn } from './why.ts';
export type { AuditActor, AuditRecord, AuditRow, OrganizationSummaryRow } from './operators.ts';
export type { BrowseKind, DecisionRow, IndicatorRow, DecisionFilter, IndicatorFilter } from './browse.ts';
export type { ReportAggregate, Scorer } from './indicator-sql.ts';
export { changedPaths } from './settings.ts';
export { DataDirLockedError, type LockOwner } from './data-dir-lock.ts';
export { migrate, loadMigrations } from './migrate.ts';

export interface Store {
  readonly db: Db;
  readonly orgs: OrganizationStore;
  readonly users: UserStore;
  readonly keys: ApiKeyStore;
  readonly ipv4: Ipv4Store;
  readonly settings: SettingsStore;
  readonly agents: AgentStore;
  readonly secrets: SecretStore;
  readonly files: FileStore;
  readonly domains: NamedIndicatorStore;
  readonly urls: NamedIndicatorStore;
  readonly vpn: VpnStore;
  readonly browse: BrowseStore;
  readonly why: WhyStore;
  readonly operators: OperatorStore;
  close(): Promise<void>;
}

export function storeOver(db: Db): Store {
  return {
    db,
    orgs: new OrganizationStore(db),
    users: new UserStore(db),
    keys: new ApiKeyStore(db),
    ipv4: new Ipv4Store(db),
    settings: new SettingsStore(db),
    agents: new AgentStore(db),
    secrets: new SecretStore(db),
    files: new FileStore(db),
    domains: new NamedIndicatorStore(db, 'domain'),
    urls: new NamedIndicatorStore(db, 'url'),
    vpn: new VpnStore(db),
    browse: new BrowseStore(db),
    why: new WhyStore(db),
    operators: new OperatorStore(db),
    close: () => db.close(),
  };
}

export interface OpenStoreOptions {
  databaseUrl?: string | undefined;
  dataDir?: string | undefined;
  poolMax?: number;
  migrate?: boolean;
  /** Who opens an embedded store (its data directory's lock says so to whoever else tries). */
  owner?: LockOwner;
}

/** PostgreSQL when a URL is given, otherwise the embedded PGlite under dataDir (in memory without one). */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  // Only the driver in use is loaded: a server on PostgreSQL never loads PGlite's code, nor the
  // embedded one pg's.
  const db = options.databaseUrl
    ? await (await import('./pg-driver.ts')).openPostgres({ connectionString: options.databaseUrl, ...(options.poolMax ? { max: options.poolMax } : {}) })
    : await (await import('./pglite-driver.ts')).openPglite(options.dataDir, options.owner ? { owner: options.owner } : {});
  if (options.migrate !== false) await migrate(db);
  return storeOver(db);
}
