import type { FastifyReply, FastifyRequest } from 'fastify';
import { chargeListAnswer } from '../plugins/coins.ts';
import { textListAnswer, type TextListOptions } from '../services/text-list.ts';

/**
 * Answers a plain-text list request (services/text-list.ts): `ETag`, `next_page`, a 304 when
 * `If-None-Match` names the ETag (free), else the coin charge and the page or its stream.
 */
export async function sendTextList<Row, Key>(request: FastifyRequest, reply: FastifyReply, options: TextListOptions<Row, Key>): Promise<FastifyReply> {
  const answer = await textListAnswer(options, request.headers['if-none-match'], (err) => request.log.error({ err }, 'text list stream failed'));
  if (answer.nextPage !== null) reply.header('next_page', answer.nextPage);
  reply.header('etag', answer.etag).header('cache-control', 'private, no-cache').type('text/plain; charset=utf-8');
  if (answer.notModified) return reply.code(304).send();
  chargeListAnswer(request);
  return reply.send(answer.body());
}
