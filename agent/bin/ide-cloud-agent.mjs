#!/usr/bin/env node
// The CLI front's entry: runs the bundle that `npm run build -w agent` writes to dist/cli.mjs.
import console from 'node:console';
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

const bundle = new URL('../dist/cli.mjs', import.meta.url);
if (!existsSync(bundle)) {
  console.error('ide-cloud-agent: not built yet; run `npm run build -w agent` first');
  process.exit(70);
}
await import(bundle.href);
