/*
 * This plugin's test fixtures, published as `@rampart/enforcer-opendxl-tie/testing` for the
 * end-to-end tests under test/e2e: a test PKI and a TLS-only mosquitto that requires client
 * certificates (tls-broker.ts), and the stand-in TIE service on it (tie-stand-in.ts).
 */
export { makePki, removePki, startBroker, type Broker, type TestPki } from './tls-broker.ts';
export { startTieStandIn, type StoredReputation, type TieStandIn } from './tie-stand-in.ts';
