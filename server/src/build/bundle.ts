// The operator's and the service's images run one bundled, minified file each (built here with
// esbuild, run by `npm run build`), not the tsc output with node_modules. @kubernetes/client-node
// loads its whole generated API (thousands of modules, megabytes of source that V8 keeps); the
// bundle keeps only what is used, about half of what the library costs in memory (BENCHMARKS.md).
// The landing page stays unbundled: it runs esbuild itself at start (landing/bundle.ts).
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The processes that ship as one file each, by their entry in server/src. */
export const BUNDLED_ENTRIES = { operator: 'operator/main.ts', service: 'service/main.ts' } as const;
export type BundledProcess = keyof typeof BUNDLED_ENTRIES;

/**
 * Optional dependencies of bundled libraries, loaded inside try/catch and not installed: ws's native
 * speed-ups and node-fetch's charset conversion. They stay imports; everything else is in the bundle.
 */
export const OPTIONAL_IMPORTS = ['bufferutil', 'utf-8-validate', 'encoding'];

const SERVER_SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
export const BUNDLE_DIR = path.resolve(SERVER_SRC, '../dist/bundle');

/** Path of a process's bundle in `outdir`. */
export const bundlePath = (outdir: string, name: BundledProcess): string => path.join(outdir, `${name}.mjs`);

/**
 * Writes `<outdir>/operator.mjs` and `<outdir>/service.mjs`. Answers what each bundle still imports at
 * run time (esbuild's metafile): Node's own modules and OPTIONAL_IMPORTS, so the image needs no node_modules.
 */
export async function bundleServer(outdir: string = BUNDLE_DIR): Promise<Record<BundledProcess, string[]>> {
  const { metafile } = await build({
    entryPoints: Object.fromEntries(
      Object.entries(BUNDLED_ENTRIES).map(([name, entry]) => [name, path.join(SERVER_SRC, entry)]),
    ),
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // Whitespace and syntax only: identifiers keep their names, so error and class names stay
    // readable in logs without esbuild's keepNames, which renames every function as it is created.
    minifyWhitespace: true,
    minifySyntax: true,
    sourcemap: 'linked',
    logLevel: 'warning',
    metafile: true,
    external: OPTIONAL_IMPORTS,
    // CommonJS dependencies inside an ES module bundle still call require() for Node's own modules.
    banner: {
      js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
    },
  });
  const external = (name: BundledProcess) => {
    // The metafile names outputs relative to the working directory.
    const output = metafile.outputs[path.relative(process.cwd(), bundlePath(outdir, name))];
    if (!output) throw new Error(`esbuild wrote no ${bundlePath(outdir, name)}`);
    return [...new Set(output.imports.filter((i) => i.external).map((i) => i.path))];
  };
  return { operator: external('operator'), service: external('service') };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  await bundleServer(process.argv[2] ? path.resolve(process.argv[2]) : BUNDLE_DIR);
}
