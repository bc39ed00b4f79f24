import { createHmac, timingSafeEqual } from 'node:crypto';
import { ApiError } from '@rampart/contracts';

/**
 * Opaque, stateless page cursors for the plain-text lists (`next_page`). A cursor carries the
 * position after the last line served and a hash of the filters it was issued for, signed with
 * a key every replica shares (CURSOR_SECRET, else a secret kept in the store). Any replica can continue
 * it; a cursor used with other filters, or tampered with, is a 400.
 */
export interface CursorCodec {
  encode(filters: Record<string, unknown>, position: unknown): string;
  decode<T>(token: string, filters: Record<string, unknown>): T;
}

function filterHash(filters: Record<string, unknown>): string {
  const keys = Object.keys(filters).sort();
  return createHmac('sha256', 'filters').update(JSON.stringify(keys.map((k) => [k, filters[k]]))).digest('base64url').slice(0, 16);
}

export function cursorCodec(secret: string): CursorCodec {
  const key = Buffer.from(secret);
  const sign = (body: string) => createHmac('sha256', key).update(body).digest('base64url').slice(0, 22);
  return {
    encode(filters, position) {
      const body = Buffer.from(JSON.stringify({ f: filterHash(filters), p: position })).toString('base64url');
      return `${body}.${sign(body)}`;
    },
    decode<T>(token: string, filters: Record<string, unknown>): T {
      const [body, mac] = token.split('.');
      if (!body || !mac) throw new ApiError('validation_failed', 'page: not a cursor issued by this service', { errors: [{ path: 'querystring.page', message: 'malformed cursor' }] });
      const expected = Buffer.from(sign(body));
      const given = Buffer.from(mac);
      if (expected.length !== given.length || !timingSafeEqual(expected, given)) {
        throw new ApiError('validation_failed', 'page: the cursor signature does not match', { errors: [{ path: 'querystring.page', message: 'invalid cursor' }] });
      }
      const parsed = JSON.parse(Buffer.from(body, 'base64url').toString()) as { f: string; p: T };
      if (parsed.f !== filterHash(filters)) {
        throw new ApiError('validation_failed', 'page: the cursor was issued for other filters', { errors: [{ path: 'querystring.page', message: 'cursor does not match these filters' }] });
      }
      return parsed.p;
    },
  };
}
