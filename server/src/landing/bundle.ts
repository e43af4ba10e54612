import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * The page's script: client/main.ts with its imports (the pure parameter and message modules, and
 * oidc-client-ts from node_modules) bundled by esbuild into one file, once at start-up, in memory.
 */
export async function buildClientBundle(): Promise<string> {
  const ts = fileURLToPath(new URL('./client/main.ts', import.meta.url));
  const entry = existsSync(ts) ? ts : fileURLToPath(new URL('./client/main.js', import.meta.url));
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: ['es2020'],
    minify: true,
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}
