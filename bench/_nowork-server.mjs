// The ceiling of bench/lookups.ts: a fastify server in a process of its own that answers every
// GET (or POST) with one recorded answer (status, headers, body: a look-up's, read from the JSON file named
// by NOWORK_ANSWER) and does nothing else. No key is checked and nothing is looked up: what a
// fastify server on this machine reaches for the same requests and the same bytes.
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

const answer = JSON.parse(readFileSync(process.env.NOWORK_ANSWER, 'utf8'));
const app = Fastify();
// GET for the look-ups (bench/lookups.ts), POST for the reports (bench/pg-ingest.ts: a JSON body
// is parsed, as any fastify route that takes one does, and dropped).
app.route({ method: ['GET', 'POST'], url: '/*', handler: (_request, reply) => {
  reply.code(answer.status).headers(answer.headers).send(answer.body);
} });
await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`${JSON.stringify({ port: app.server.address().port })}\n`);
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
