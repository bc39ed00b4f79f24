#!/usr/bin/env node
// Bundles the agent for installation on hosts (the .deb layout puts it in /usr/lib/rampart-agent/):
// no tsx at run time, which saves its loader thread (~30 MB RSS) and the start-up compile.
// Usage: node scripts/bundle.mjs [outfile] (default dist/rampart-agent.mjs). The entry module is
// `outfile`; code only some plugins load on demand (the AWS SDK: ~5 MB of source, ~25 MB of RSS
// once parsed) goes to chunks in `rampart-agent-chunks/` beside it, read only when imported;
// packaging/ is copied to `rampart-agent-packaging/` beside it (what `install` places).
import { build } from 'esbuild';
import { cpSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * zod's `locales` namespace (`z.locales.*`, error messages in 60 languages) is 40% of the source
 * every command loads with the contracts; the agent uses none of it (zod's default, English, is
 * imported apart). Only `en` is kept: ~370 KB less source to read, parse and hold per process.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onLoad({ filter: /[\\/]zod[\\/]v4[\\/]locales[\\/]index\.js$/ }, (args) => ({
      contents: 'export { default as en } from "./en.js";\n',
      resolveDir: dirname(args.path),
      loader: 'js',
    }));
  },
};

const root = fileURLToPath(new URL('..', import.meta.url));
const outfile = process.argv[2] ?? `${root}/dist/rampart-agent.mjs`;

await build({
  entryPoints: { [basename(outfile, '.mjs')]: `${root}/src/main.ts` },
  outdir: dirname(outfile),
  outExtension: { '.js': '.mjs' },
  splitting: true,
  chunkNames: 'rampart-agent-chunks/[name]-[hash]',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  legalComments: 'none',
  // V8 keeps each module's source text for as long as the process runs (lazy compilation,
  // Function.prototype.toString): without comments and indentation the loaded chunks' text is
  // about half, and all ASCII. A chunk with one non-Latin-1 character in a comment (an em dash,
  // '…', '→') is held as a two-byte string, twice its size (issue 35 item 7). Names are kept
  // (no identifier mangling), so stack traces and logged error types read as in the sources.
  minifyWhitespace: true,
  minifySyntax: true,
  // Some dependencies are CommonJS and call require() for Node built-ins, or use __dirname (ssh2).
  banner: {
    js: [
      "import { createRequire as __rampartRequire } from 'node:module';",
      "import { dirname as __rampartDirname } from 'node:path';",
      "import { fileURLToPath as __rampartFileUrl } from 'node:url';",
      'const require = __rampartRequire(import.meta.url);',
      'const __filename = __rampartFileUrl(import.meta.url);',
      'const __dirname = __rampartDirname(__filename);',
    ].join(' '),
  },
  // ssh2 (MikroTik enforcer) loads optional native add-ons inside try/catch and falls back to
  // pure JavaScript without them; a bundle cannot carry .node files, so it takes the fallback.
  external: ['*.node'],
  plugins: [zodEnglishOnly],
  logLevel: 'warning',
});
// The unit, agent.env and the sample agent.json, for `rampart-agent install` run from the bundle.
cpSync(`${root}/packaging`, join(dirname(outfile), 'rampart-agent-packaging'), { recursive: true });
process.stdout.write(`${outfile}\n`);
