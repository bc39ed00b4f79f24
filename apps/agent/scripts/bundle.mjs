#!/usr/bin/env node
// Bundles the agent into one ES module for installation on hosts (the .deb layout puts it in
// /usr/lib/rampart-agent/): no tsx at run time, which saves its loader thread (~30 MB RSS) and
// the start-up compile. Usage: node scripts/bundle.mjs [outfile] (default dist/rampart-agent.mjs).
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const outfile = process.argv[2] ?? `${root}/dist/rampart-agent.mjs`;

await build({
  entryPoints: [`${root}/src/main.ts`],
  outfile,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  legalComments: 'none',
  // Some dependencies are CommonJS and call require() for Node built-ins.
  banner: { js: "import { createRequire as __rampartRequire } from 'node:module'; const require = __rampartRequire(import.meta.url);" },
  logLevel: 'warning',
});
process.stdout.write(`${outfile}\n`);
