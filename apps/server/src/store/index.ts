import type { Db } from './db.ts';
import { ImportKeyStore } from './import-keys.ts';
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
import { Ipv4Lookup } from './ipv4-lookup.ts';
import { FileLookup } from './file-lookup.ts';
import { OverviewStore } from './overview.ts';
import { RollupStore } from './rollups.ts';
import { Ipv4IngestStore } from './ipv4-ingest-store.ts';
import { MirrorRowsStore } from './ipv4-list-mirror.ts';
import { CrowdsecStore } from './crowdsec.ts';
import { attachSql } from './sql-handle.ts';
import type { ConnectionEvent, NotificationHandler, StoreHealth } from './db.ts';

export type { Db, Queryable, Transaction, QueryResult, ConnectionEvent } from './db.ts';
export { StoreUnavailableError } from './db.ts';
export type { Ipv4ListFilter, Ipv4ListRow, Ipv4DecisionRow } from './ipv4.ts';
export type { CursorChange, DeliveredEntry } from './crowdsec.ts';
export type { Ipv4ReportItem, Ipv4ReportOutcome, IngestRules, IngestProgress, IngestResult, IngestOptions, PolicyChangeScope } from './ipv4-ingest.ts';
export { ReservedInBatchError } from './reserved-in-batch.ts';
export type { ScoreListFilter } from './indicator-sql.ts';
export type { Ipv4IngestStore } from './ipv4-ingest-store.ts';
export type { MirrorRowsStore, AsInfoRow, MirrorAnchorRow, MirrorChanges, MirrorDecisionRow, MirrorDetailRow, MirrorSince, WireRow } from './ipv4-list-mirror.ts';
export { decodeRow, ROW_BYTES } from './ipv4-list-mirror.ts';
export { agentSubject } from './agents.ts';
export type { Organization } from './organizations.ts';
export type { UserRow } from './users.ts';
export type { ApiKeyRow, KeyPrincipal } from './api-keys.ts';
export type { Ipv4Row } from './ipv4.ts';
export type { AuditEntry } from './settings.ts';
export type { CheckinVia, AgentRow, AgentTokenRow, AgentTokenPrincipal, EnforcedEntry, StoredAttestation } from './agents.ts';
export type { FileRow, DigestKind } from './files.ts';
export type { NamedRow } from './named-indicators.ts';
export type { VpnLicenseRow } from './vpn.ts';
export type { ReporterRow, DecisionOn } from './why.ts';
export type { AuditActor, AuditFilter, AuditRecord, AuditRow, OrganizationSummaryRow } from './operators.ts';
export type { BrowseKind, DecisionRow, IndicatorRow, DecisionFilter, IndicatorFilter } from './browse.ts';
export type { DecisionNote, ReportAggregate, Scorer } from './indicator-sql.ts';
export type { RollupStore, RollupCounts, RollupSeries, BandBounds, BandCounts, AllianceActivity } from './rollups.ts';
export { changedPaths } from './settings.ts';
export { DataDirLockedError, dataDirHolder, type LockOwner } from './data-dir-lock.ts';
export { migrate, loadMigrations } from './migrate.ts';

/**
 * The database as the layers above the store see it: its kind, health and notifications, never
 * its SQL (only store/ holds the handle; tests reach it through sql-handle.ts).
 */
export interface StoreConnection {
  readonly kind: 'postgres' | 'pglite';
  health(): StoreHealth;
  stats(): ReturnType<Db['stats']>;
  onConnection(handler: (event: ConnectionEvent) => void): () => void;
  /** One round trip (readiness, /version); throws when the store does not answer. */
  ping(): Promise<void>;
  /** Notifications (PostgreSQL NOTIFY, in-process on PGlite): the event bus's transport. */
  listen(channel: string, handler: NotificationHandler): Promise<() => Promise<void>>;
  notify(channel: string, payload: string): Promise<void>;
}

/** Every class that owns SQL, built once over one database. */
export interface Store {
  readonly connection: StoreConnection;
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
  /** Look-ups of one address by many concurrent requests, batched into one statement. */
  readonly ipv4Lookups: Ipv4Lookup;
  /** Look-ups of one file digest by many concurrent requests, batched into one statement. */
  readonly fileLookups: FileLookup;
  readonly overview: OverviewStore;
  /** The console's figures over time (reports, agents, coins, bands), stored as they happen. */
  readonly rollups: RollupStore;
  /** The IPv4 report transaction (the ingest batcher's one statement path). */
  readonly ipv4Ingest: Ipv4IngestStore;
  /** What the in-process IPv4 list mirror loads and catches up from. */
  readonly ipv4Mirror: MirrorRowsStore;
  /** Cursors of CrowdSec bouncer keys. */
  readonly crowdsec: CrowdsecStore;
  /** Keys of rows bulk imports reported (services/imports). */
  readonly importKeys: ImportKeyStore;
  /** Applies the migrations not yet applied; returns their names. */
  migrate(): Promise<string[]>;
  close(): Promise<void>;
}

function connectionOf(db: Db): StoreConnection {
  return {
    kind: db.kind,
    health: () => db.health(),
    stats: () => db.stats(),
    onConnection: (handler) => db.onConnection(handler),
    ping: async () => {
      await db.query('select 1');
    },
    listen: (channel, handler) => db.listen(channel, handler),
    notify: (channel, payload) => db.notify(channel, payload),
  };
}

export function storeOver(db: Db): Store {
  return attachSql(db, {
    connection: connectionOf(db),
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
    ipv4Lookups: new Ipv4Lookup(db),
    fileLookups: new FileLookup(db),
    overview: new OverviewStore(db),
    rollups: new RollupStore(db),
    ipv4Ingest: new Ipv4IngestStore(db),
    ipv4Mirror: new MirrorRowsStore(db),
    crowdsec: new CrowdsecStore(db),
    importKeys: new ImportKeyStore(db),
    migrate: () => migrate(db),
    close: () => db.close(),
  });
}

export interface OpenStoreOptions {
  databaseUrl?: string | undefined;
  dataDir?: string | undefined;
  poolMax?: number;
  migrate?: boolean;
  /** Who opens an embedded store (its data directory's lock says so to whoever else tries). */
  owner?: LockOwner;
  /** Embedded store: fsync every commit (the default). false: PGlite as it ships (bench/pglite-ingest.ts's baseline). */
  durable?: boolean;
}

/** PostgreSQL when a URL is given, otherwise the embedded PGlite under dataDir (in memory without one). */
export async function openStore(options: OpenStoreOptions): Promise<Store> {
  // Only the driver in use is loaded: a server on PostgreSQL never loads PGlite's code, nor the
  // embedded one pg's.
  const db = options.databaseUrl
    ? await (await import('./pg-driver.ts')).openPostgres({ connectionString: options.databaseUrl, ...(options.poolMax ? { max: options.poolMax } : {}) })
    : await (await import('./pglite-driver.ts')).openPglite(options.dataDir, { ...(options.owner ? { owner: options.owner } : {}), ...(options.durable === false ? { durable: false } : {}) });
  // User timing marks: the server logs them with its first line (main.ts).
  performance.mark('rampart:store-open');
  if (options.migrate !== false) await migrate(db);
  performance.mark('rampart:store-migrated');
  return storeOver(db);
}
