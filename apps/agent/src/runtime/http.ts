import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** `/metrics` (Prometheus text) and `/healthz` (JSON status; 503 when unhealthy) on a local port. */
export async function startOpsServer(options: {
  host: string;
  port: number;
  registry: Registry;
  health: () => Promise<{ healthy: boolean; [key: string]: unknown }>;
}): Promise<{ server: Server; port: number; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const answer = async () => {
      if (req.method !== 'GET') {
        res.writeHead(405).end();
        return;
      }
      if (path === '/metrics') {
        const text = await options.registry.metrics();
        res.writeHead(200, { 'content-type': options.registry.contentType }).end(text);
      } else if (path === '/healthz') {
        const body = await options.health();
        res.writeHead(body.healthy ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(body));
      } else {
        res.writeHead(404).end();
      }
    };
    answer().catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    server,
    port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
