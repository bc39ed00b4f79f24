#!/usr/bin/env node
// The operators' `rampart` command, run from the bundle with plain Node like the server
// (dist/cli.mjs): scripts/build.mjs first, which does nothing (a few ms) when no input changed
// since the last build, and builds otherwise.
await import('../scripts/build.mjs');
await import('../dist/cli.mjs');
