import type { CoinKind } from '../config.ts';

/** What every route declares about itself in fastify's `config`. */
export interface RouteOptions {
  /** `public` routes need no key; everything else does. Default `key`. */
  auth?: 'public' | 'key';
  /** Lowest role allowed (1 reader, 2 contributor, 3 admin, 9 operator). Default 1. */
  minRole?: number;
  /** The coin price kind charged when the request succeeds. */
  coin?: CoinKind;
}

// Aliased: inside `declare module 'fastify'` the name RouteOptions means fastify's own
// interface once another augmentation (@fastify/websocket) declares it there.
type RampartRouteOptions = RouteOptions;

declare module 'fastify' {
  interface FastifyContextConfig {
    rampart?: RampartRouteOptions;
  }
}
