import { stringify } from '../services/page-json.ts';

/**
 * The response serializer of the hot read routes (single look-ups and feed pages): plain
 * `JSON.stringify`. The default (fastify-type-provider-zod) parses every response with its zod
 * schema before writing it, about a quarter of a look-up's CPU time. A route takes this only when its
 * handler builds every field of the response itself from contract types (no row or document
 * spread into it, which the parse would have stripped); `test/plain-json-routes.test.ts` checks
 * each such route's bodies against the contract. The schema still documents the response.
 * Page envelopes are written with their repeated header parts from a cache (services/page-json.ts).
 */
export function plainJson(): (data: unknown) => string {
  return stringify;
}
