import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/**
 * The page's script: client/main.ts with its imports (the pure parameter and message modules, and
 * oidc-client-ts from node_modules) bundled by esbuild into one file, once at start-up, in memory.
 * The page carries it inline (page.ts), so esbuild writes it safe for a <script> element.
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
    // Escapes `</script` in strings, so the script can stand inside a <script> element.
    supported: { 'inline-script': true },
    minify: true,
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
  });
  return result.outputFiles[0]!.text;
}
