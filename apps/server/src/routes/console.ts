import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { serverPath } from '../paths.ts';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '@rampart/contracts';
import type { ConsoleAsset } from '@rampart/console';

const CONTENT_TYPES: Record<string, string> = { html: 'text/html; charset=utf-8', js: 'text/javascript; charset=utf-8', css: 'text/css; charset=utf-8' };

const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
};

/** `true` in the server's bundle (scripts/build.mjs defines it); undeclared when the sources run. */
declare const RAMPART_BUNDLE: boolean | undefined;

function readAssets(dir: string): Map<string, ConsoleAsset> {
  const files = new Map<string, ConsoleAsset>();
  for (const name of readdirSync(dir)) files.set(name, { contentType: CONTENT_TYPES[name.split('.').pop() ?? ''] ?? 'application/octet-stream', body: readFileSync(join(dir, name)) });
  return files;
}

/**
 * The bundle (`npm start`) serves the files scripts/build.mjs wrote beside it, so the running
 * server never starts esbuild. Otherwise prebuilt files (`npm run build -w @rampart/console`) when
 * present, else built in memory on first use (sources through tsx: the console as it is now).
 */
async function loadAssets(): Promise<Map<string, ConsoleAsset>> {
  const bundled = serverPath('dist', 'console');
  if (typeof RAMPART_BUNDLE !== 'undefined' && RAMPART_BUNDLE && existsSync(join(bundled, 'index.html'))) return readAssets(bundled);
  const dist = serverPath('..', 'console', 'dist');
  if (existsSync(join(dist, 'index.html'))) return readAssets(dist);
  const { buildConsole } = await import('@rampart/console');
  return buildConsole();
}

/**
 * The web console at `/console/`: static files on the API's origin (no second server, no CORS).
 * It holds no secrets and calls only the public API with the key the administrator types in.
 */
export const consoleRoutes: FastifyPluginAsync = async (app) => {
  let assets: Promise<Map<string, ConsoleAsset>> | undefined;
  const get = () => {
    assets ??= loadAssets().catch((err: unknown) => {
      assets = undefined;
      throw err;
    });
    return assets;
  };
  const publicRoute = { rampart: { auth: 'public' as const } };

  // The app's asset links are absolute, so `/console` and `/console/` both serve the page.
  const serve = async (name: string, request: FastifyRequest, reply: FastifyReply) => {
    let files: Map<string, ConsoleAsset>;
    try {
      files = await get();
    } catch (err) {
      request.log.error({ err }, 'console build failed');
      throw new ApiError('internal', 'the console could not be built; see the server log');
    }
    const file = files.get(name);
    if (!file) throw new ApiError('route_not_found', `no console file ${name}`);
    void reply.headers(SECURITY_HEADERS).header('content-type', file.contentType).header('cache-control', name === 'index.html' ? 'no-cache' : 'public, max-age=300');
    return reply.send(file.body);
  };
  app.get('/console', { config: publicRoute, schema: { hide: true } }, (request, reply) => serve('index.html', request, reply));
  app.get<{ Params: { file: string } }>('/console/:file', { config: publicRoute, schema: { hide: true } }, (request, reply) => serve(request.params.file || 'index.html', request, reply));
};
