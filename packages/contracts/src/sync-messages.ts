import { z } from 'zod';
import { AgentSettingsDocument } from './agent-config.ts';
import { ReportedPlugin } from './agent-integrations.ts';
import { AgentCapabilities, PluginState } from './agent-messages.ts';
import { OrganizationConfig } from './org-config.ts';

/*
 * Messages of the live sync channel (WebSocket, `GET /api/v1/agents/sync`), one JSON object
 * per text frame, discriminated by `type`. The server pushes; the agent answers pings and may
 * send its enforcement state. A message of an unknown type is ignored by both sides (newer
 * peers may add types), which is why the unions below are parsed per type.
 */

/** The four kinds of indicator the feeds carry (spec 1.1). */
export const IndicatorKind = z.enum(['ipv4', 'file', 'domain', 'url']);
export type IndicatorKind = z.infer<typeof IndicatorKind>;

/** First frame after the upgrade: who the server thinks the agent is, and the current documents. */
export const SyncHello = z.object({
  type: z.literal('hello'),
  gaid: z.string(),
  server_time: z.int().describe('Epoch seconds on the server'),
  settings: AgentSettingsDocument.describe('The agent settings document, secrets unmasked for the agent itself'),
  organization: OrganizationConfig,
  settings_version: z.int().min(0).optional().describe('Version of the agent settings document'),
  organization_version: z.int().min(0).optional().describe('Version of the organization settings document (0: defaults)'),
  feed: z
    .partialRecord(IndicatorKind, z.int().min(0))
    .optional()
    .describe('Feed cursor: newest ts per feed now; an agent whose own cursor is older pulls from its cursor'),
});

/** A settings document changed; `settings`/`organization` carry the new document. */
export const SyncSettingsChanged = z.object({
  type: z.literal('settings_changed'),
  subject: z.enum(['organization', 'agent']),
  version: z.int().min(0),
  settings: AgentSettingsDocument.optional(),
  organization: OrganizationConfig.optional(),
});

/** The organization changed a decision: the agent re-evaluates that indicator now. */
export const SyncDecisionChanged = z.object({
  type: z.literal('decision_changed'),
  kind: IndicatorKind,
  indicator: z.string().max(2048),
  decision: z.union([z.literal(-1), z.literal(0), z.literal(1)]),
  ttl: z.int().nullable(),
  /**
   * The feed second of the change (every kind; for a domain, URL or digest, the second of the
   * record the organization's feed now holds): every feed record it alters is delivered again
   * with a `ts` at least this. An agent whose feed already delivered the record at this `ts` or later
   * holds this change or a newer one, and drops the message (it may arrive after the feed read).
   */
  ts: z.int().min(0).optional(),
});

/** New indicators exist up to feed `ts`: the agent pulls its feed now instead of at sync_time. */
export const SyncFeedChanged = z.object({
  type: z.literal('feed_changed'),
  kind: IndicatorKind,
  ts: z.int().min(0),
});

export const SyncPing = z.object({ type: z.literal('ping'), nonce: z.string().max(64) });
export const SyncPong = z.object({ type: z.literal('pong'), nonce: z.string().max(64) });

/**
 * Agent → server: what it enforces now and what it can run (also counts as a check-in). Sent
 * first thing after the upgrade (the agent's hello) and after each settings change.
 */
export const SyncState = z.object({
  type: z.literal('state'),
  version: z.string().max(64).optional(),
  hostname: z.string().max(255).optional(),
  enforced: z.int().min(0).describe('Number of addresses/networks enforced'),
  plugins: z
    .array(
      z.object({
        plugin: ReportedPlugin,
        enforced: z.int().min(0),
        healthy: z.boolean(),
        state: PluginState.optional(),
        error: z.string().max(500).optional(),
      }),
    )
    .max(64)
    .default([]),
  capabilities: AgentCapabilities.optional(),
});

// Heartbeats go both ways: either side may send `ping`; the other answers `pong` with its nonce.
export const ServerSyncMessage = z.discriminatedUnion('type', [SyncHello, SyncSettingsChanged, SyncDecisionChanged, SyncFeedChanged, SyncPing, SyncPong]);
export type ServerSyncMessage = z.infer<typeof ServerSyncMessage>;
export const AgentSyncMessage = z.discriminatedUnion('type', [SyncPong, SyncState, SyncPing]);
export type AgentSyncMessage = z.infer<typeof AgentSyncMessage>;

/**
 * WebSocket close codes the server uses (4000-4999 is the application range). `resync`: the
 * server missed changes it should have pushed; the agent reconnects and starts from the hello.
 */
export const SYNC_CLOSE = { unauthorized: 4401, forbidden: 4403, replaced: 4409, shutdown: 1001, resync: 1012 } as const;
