/**
 * `@rampart/server/testing`: what tests in other workspaces (the client's, the end-to-end and
 * console suites under test/) may use of the control plane. They import this entry point only,
 * never a file under apps/server/src or apps/server/test, so the server's inside can move freely.
 */
export { buildApp } from '../../src/app.ts';
export { testConfig, type AppConfig } from '../../src/config.ts';
export { openStore, type Store } from '../../src/store/index.ts';
/** The SQL handle behind a store: seeding and inspecting only (the server's layers never see it). */
export { sqlOf } from '../../src/store/sql-handle.ts';
export { createApiKey, createOrganization, createUser } from '../../src/services/operators/admin.ts';
export { seedOrg, testApp, type TestOrg } from './app.ts';
export { createTestDatabase, driverCases, postgresAvailable, type DriverCase } from './databases.ts';
export { agentConfig, registerAgent } from './agents.ts';
export { connectSync, until, type SyncPeer } from './sync-client.ts';
export { exited, startServerProcess, type ServerProcess } from './server-process.ts';
export { startThrowawayPostgres, startThrowawayStandby, throwawayPostgresAvailable, type ThrowawayPostgres, type ThrowawayStandby } from './throwaway-postgres.ts';
