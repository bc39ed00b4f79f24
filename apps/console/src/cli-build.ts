import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildConsole } from './build.ts';

// `npm run build -w @rampart/console [outdir]`: writes the static files the server serves.
const out = process.argv[2] ?? 'dist';
mkdirSync(out, { recursive: true });
for (const [name, asset] of await buildConsole()) writeFileSync(join(out, name), asset.body);
process.stdout.write(`console built into ${out}\n`);
