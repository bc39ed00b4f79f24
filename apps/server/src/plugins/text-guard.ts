import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { ApiError } from '@rampart/contracts';

// U+0000, or a surrogate half without its other half: neither can be stored as PostgreSQL text
// or jsonb, so such input is refused up front with the field named instead of failing in SQL.
const BAD_TEXT = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether `value` is an object of plain values (path parameters, query strings) with nothing
 * unstorable in it: undefined when it holds nested objects, so that findUnstorableText walks it.
 */
function flatAndStorable(value: object): boolean | undefined {
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key];
    if (item !== null && typeof item === 'object') return undefined;
    if (BAD_TEXT.test(key) || (typeof item === 'string' && BAD_TEXT.test(item))) return false;
  }
  return true;
}

/** The dotted path of the first string (value or key) that cannot be stored, or undefined. */
export function findUnstorableText(value: unknown, root: string): string | undefined {
  // Nothing to find: no stack and no paths built (every request's parameters pass here).
  if (value === undefined || value === null || typeof value === 'number' || typeof value === 'boolean') return undefined;
  if (typeof value === 'object' && !Array.isArray(value) && flatAndStorable(value) === true) return undefined;
  return walkUnstorable(value, root);
}

/** findUnstorableText the long way: every string and key, depth first, with its path. */
export function walkUnstorable(value: unknown, root: string): string | undefined {
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
  // A callback hook: an async one costs every request a promise and a microtask.
  app.addHook('preValidation', (request, _reply, done) => {
    const path =
      findUnstorableText(request.params, 'params') ?? findUnstorableText(request.query, 'querystring') ?? findUnstorableText(request.body, 'body');
    if (path) {
      const message = 'contains a NUL character or an unpaired surrogate';
      return done(new ApiError('validation_failed', `${path}: ${message}`, { errors: [{ path, message }] }));
    }
    done();
  });
});
