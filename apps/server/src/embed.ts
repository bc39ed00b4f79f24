/**
 * What a program embedding the control plane needs (bench/ runs the bundled server through it):
 * the app, its configuration, the store and the administrative services.
 */
export { buildApp } from './app.ts';
export { loadConfig } from './config.ts';
export { openStore } from './store/index.ts';
export { createApiKey, createOrganization, createUser } from './services/operators/admin.ts';
export { createEnrichment } from './services/enrichment/enrichment.ts';
export { Ipv4Mirror } from './services/ipv4/mirror/index.ts';
