import websocket from '@fastify/websocket';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { Gauge } from 'prom-client';
import { ApiError } from '@rampart/contracts';
import type { AppContext } from '../context.ts';
import { principalOf } from '../plugins/auth.ts';
import { SyncHub } from './hub.ts';

/** Largest frame an agent may send (its `state` message is the biggest, well under this). */
const MAX_AGENT_FRAME_BYTES = 64 * 1024;

/**
 * `GET /api/v1/agents/sync`: the live sync channel (WebSocket). Only an agent key opens it;
 * anything else is refused before the upgrade. Messages: `ServerSyncMessage` /
 * `AgentSyncMessage` in the contracts.
 */
export const agentSyncRoute: FastifyPluginAsyncZod<{ context: AppContext }> = async (app, { context }) => {
  const hub = new SyncHub({ store: context.store, events: context.events, log: app.log.child({ component: 'sync' }), heartbeatMs: context.config.syncHeartbeatSeconds * 1000 });
  // Before @fastify/websocket's own shutdown hook (hooks run in the order they were added), which
  // closes every socket without a code (1005): agents are told the server is going away (1001)
  // and retry on their quick schedule.
  app.addHook('preClose', async () => hub.stop());
  await app.register(websocket, { options: { maxPayload: MAX_AGENT_FRAME_BYTES } });
  await hub.start();
  new Gauge({
    name: 'rampart_sync_connections',
    help: 'Agents connected to the sync channel of this replica',
    registers: [context.metrics.registry],
    collect() {
      this.set(hub.size);
    },
  });
  // An upgrade refused by the auth hook (which runs before @fastify/websocket's own hooks in
  // this scope) would otherwise leave the raw socket open and hold the server's close.
  app.addHook('onResponse', async (request, reply) => {
    if (reply.statusCode >= 400 && request.headers.upgrade) request.raw.socket?.destroy();
  });

  app.route({
    method: 'GET',
    url: '/agents/sync',
    schema: {
      tags: ['agents'],
      summary: 'Live sync channel for agents: WebSocket upgrade, agent key only (messages: ServerSyncMessage / AgentSyncMessage)',
    },
    preHandler: async (request) => {
      if (!principalOf(request).agent) throw new ApiError('forbidden', 'the sync channel is for agent keys');
    },
    // A plain GET (no upgrade) gets a problem rather than an empty 404.
    handler: async () => {
      throw new ApiError('bad_request', 'this endpoint is a WebSocket: send Connection: Upgrade and Upgrade: websocket', { errors: [{ path: 'headers.upgrade', message: 'must be websocket' }] });
    },
    wsHandler: (socket, request) => {
      const { org, agent } = principalOf(request);
      void hub.attach(socket, { orgId: org.id, agentId: agent!.id, gaid: agent!.gaid, tokenId: agent!.tokenId });
    },
  });
};
