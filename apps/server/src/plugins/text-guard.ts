import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '@rampart/contracts';

// U+0000, or a surrogate half without its other half: neither can be stored as PostgreSQL text
// or jsonb, so such input is refused up front with the field named instead of failing in SQL.
const BAD_TEXT = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The dotted path of the first string (value or key) that cannot be stored, or undefined. */
export function findUnstorableText(value: unknown, root: string): string | undefined {
  const stack: Array<[unknown, string]> = [[value, root]];
  while (stack.length > 0) {
    const [item, path] = stack.pop()!;
    if (typeof item === 'string') {
      if (BAD_TEXT.test(item)) return path;
    } else if (Array.isArray(item)) {
      for (let i = item.length - 1; i >= 0; i--) stack.push([item[i], `${path}.${i}`]);
    } else if (item !== null && typeof item === 'object') {
      for (const [key, child] of Object.entries(item)) {
        if (BAD_TEXT.test(key)) return `${path}.${key.replace(BAD_TEXT, '?')}`;
        stack.push([child, `${path}.${key}`]);
      }
    }
  }
  return undefined;
}

export const textGuardPlugin = fp(async (app: FastifyInstance) => {
  app.addHook('preValidation', async (request) => {
    const path =
      findUnstorableText(request.params, 'params') ?? findUnstorableText(request.query, 'querystring') ?? findUnstorableText(request.body, 'body');
    if (path) {
      const message = 'contains a NUL character or an unpaired surrogate';
      throw new ApiError('validation_failed', `${path}: ${message}`, { errors: [{ path, message }] });
    }
  });
});
