#!/usr/bin/env node
// Runs the TypeScript agent through tsx, so `rampart-agent` works without a build step.
import { register } from 'tsx/esm/api';

register();
await import('../src/main.ts');
