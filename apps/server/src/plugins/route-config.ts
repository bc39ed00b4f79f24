import type { FastifyRequest } from 'fastify';
import type { CoinKind } from '../config.ts';

/** What every route declares about itself in fastify's `config`. */
export interface RouteOptions {
  /**
   * `public` routes need no key; `crowdsec_bouncer` routes take an agent key in `X-Api-Key` and
   * answer 403 to a wrong or revoked one, as CrowdSec's Local API does; everything else needs a
   * key in Authorization (or an agent's `auth_name` header). Default `key`.
   */
  auth?: 'public' | 'key' | 'crowdsec_bouncer';
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

/** The request decoration routeOf keeps its snapshot in (app.ts declares it: requests keep one shape). */
export const ROUTE_SNAPSHOT = Symbol('rampart.routeOptions');
type WithRoute = FastifyRequest & { [ROUTE_SNAPSHOT]?: FastifyRequest['routeOptions'] | null };

/**
 * `request.routeOptions`, read once per request: fastify builds a new object at each read of
 * it, and the hooks of every request (auth, rate limiting, coins, metrics) read it several times.
 */
export function routeOf(request: FastifyRequest): FastifyRequest['routeOptions'] {
  return ((request as WithRoute)[ROUTE_SNAPSHOT] ??= request.routeOptions);
}
