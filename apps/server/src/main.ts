import type { AddressInfo } from 'node:net';
import { ConfigError, loadConfig } from './config.ts';
import { DataDirLockedError, openStore } from './store/index.ts';

/**
 * Milliseconds from the process's start to each step of the start-up (code loaded, store open and
 * migrated, app built, demo checked, listening); the store and the code load at the same time.
 */
function startMarks(): Record<string, number> {
  return Object.fromEntries(performance.getEntriesByType('mark').filter((m) => m.name.startsWith('rampart:')).map((m) => [m.name.slice(8), Math.round(m.startTime)]));
}

async function main(): Promise<void> {
  const config = loadConfig();
  // The store opens (a new embedded store's initdb in its child process, PGlite's WebAssembly
  // compile, migrations) while the app's code loads: a start waits for the longer of the two,
  // not their sum.
  const opening = openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, poolMax: config.pgPoolMax, owner: 'server' });
  opening.catch(() => {});
  const [{ buildApp }, { bootstrapDemo }] = await Promise.all([import('./app.ts'), import('./services/operators/admin.ts')]);
  performance.mark('rampart:code-loaded');
  const store = await opening;
  const app = await buildApp({ config, store });
  performance.mark('rampart:app-built');
  // Created before listening so that no request sees a half-made demo organization.
  const demo = config.demo ? await bootstrapDemo(store) : undefined;
  performance.mark('rampart:demo-checked');

  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), 10_000);
    force.unref();
    await app.close();
    await store.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));

  await app.listen({ host: config.host, port: config.port });
  const { port } = app.server.address() as AddressInfo;
  const base = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}/api/v1`;
  performance.mark('rampart:listening');
  app.log.info({ url: base, store: store.connection.kind, start_ms: startMarks() }, 'control plane listening');

  if (demo) {
    // Printed once, on the first start: the key is not stored anywhere in plaintext.
    process.stdout.write(
      [
        '',
        `Rampart created a demo organization "${demo.org.name}" (${demo.org.gid}) with ${demo.org.credit_tokens} coins.`,
        `Admin user ${demo.user.username}; API key (shown only now, keep it):`,
        `  ${demo.key}`,
        'Try:',
        `  curl -s ${base}/version`,
        `  curl -s -H "Authorization: ${demo.key}" "${base}/ips?ts=0"`,
        '',
      ].join('\n') + '\n',
    );
  }
}

main().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`${err.message}\n`);
    process.exit(2);
  }
  if (err instanceof DataDirLockedError) {
    process.stderr.write(`rampart server failed to start: ${err.message}; the embedded store takes one process at a time: wait for it to finish or stop it, then start the server again\n`);
    process.exit(3);
  }
  process.stderr.write(`rampart server failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
