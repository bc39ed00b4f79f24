import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { build } from 'esbuild';

/** One file of the built console, as the server sends it. */
export interface ConsoleAsset {
  contentType: string;
  body: Buffer;
}

// The package's own src/ folder, found through its package.json: this module may run from the
// server's bundle (apps/server/dist), where its own URL says nothing about where the sources are.
const SRC = join(dirname(createRequire(import.meta.url).resolve('@rampart/console/package.json')), 'src');
const here = (path: string) => join(SRC, path);

/**
 * Bundles the console (Preact + the typed client + the contracts) into three static files:
 * `index.html`, `app.js`, `app.css`. esbuild takes well under a second, so the server can build
 * in memory on first use when no prebuilt `dist/` exists.
 */
export async function buildConsole(options: { minify?: boolean } = {}): Promise<Map<string, ConsoleAsset>> {
  const result = await build({
    entryPoints: [here('./app/main.tsx')],
    bundle: true,
    format: 'esm',
    target: ['chrome120', 'firefox120', 'safari17'],
    platform: 'browser',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: options.minify ?? true,
    sourcemap: false,
    write: false,
    outdir: 'out',
    legalComments: 'none',
    logLevel: 'silent',
  });
  const files = new Map<string, ConsoleAsset>();
  for (const file of result.outputFiles) {
    const name = file.path.endsWith('.css') ? 'app.css' : 'app.js';
    files.set(name, { contentType: name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8', body: Buffer.from(file.contents) });
  }
  const css = await readFile(here('./app/style.css'));
  files.set('app.css', { contentType: 'text/css; charset=utf-8', body: Buffer.concat([css, files.get('app.css')?.body ?? Buffer.alloc(0)]) });
  files.set('index.html', { contentType: 'text/html; charset=utf-8', body: Buffer.from(INDEX_HTML) });
  return files;
}

const INDEX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Rampart console</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/console/app.css">
<script type="module" src="/console/app.js"></script>
</head>
<body>
<div id="root"></div>
<noscript>The Rampart console needs JavaScript.</noscript>
</body>
</html>
`;
