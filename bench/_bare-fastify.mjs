// The baseline of bench/server-footprint.ts: a bare fastify app with the logger on, one route
// answering what GET /api/v1/version answers, started by plain Node. What any fastify server
// costs on this machine: its start to the first answer and its idle resident memory.
import Fastify from 'fastify';

const app = Fastify({ logger: true });
app.get('/api/v1/version', async () => ({ version: '0.1.0', RMP_instance: 'standalone' }));
await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 0) });
const stop = async () => {
  await app.close();
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
