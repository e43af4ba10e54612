#!/usr/bin/env node
// The CLI front's entry: runs the bundle that `npm run build -w agent` writes to dist/cli.mjs.
import { existsSync } from 'node:fs';

const bundle = new URL('../dist/cli.mjs', import.meta.url);
if (!existsSync(bundle)) {
  console.error('ide-cloud-agent: not built yet; run `npm run build -w agent` first');
  process.exit(70);
}
await import(bundle.href);
