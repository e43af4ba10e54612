// The workbench's static files compressed once, at image build, not on every page load: code-server
// compresses each response on the fly (its compression middleware), which costs about 0.4 s of CPU for
// workbench.js alone (19 MB) on every student's first load, on the student's own IDE pod. This writes
// `<file>.br` (brotli, quality 9) beside every text asset of the web workbench over 8 KiB, and patches
// VS Code's static file handler (server-main.js) to send it, with `Content-Encoding: br`, to a browser
// that accepts br; the compression middleware leaves a response that has an encoding alone.
//
//   node precompress.mjs <code-server directory>
//
// The handler is minified code of one code-server version: the patch matches it exactly once or the
// build fails, naming what to look at after a code-server upgrade.
import console from 'node:console';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants } from 'node:zlib';

const TEXT = new Set(['.js', '.mjs', '.css', '.json', '.html', '.svg', '.map', '.txt', '.ttf']);
const MIN_BYTES = 8 * 1024;

async function* files(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* files(full);
    else if (entry.isFile()) yield full;
  }
}

/** Writes `<file>.br` for each text asset under `dir`; returns how many and their sizes. */
export async function precompress(dir) {
  let count = 0;
  let before = 0;
  let after = 0;
  for await (const file of files(dir)) {
    if (!TEXT.has(path.extname(file)) || (await stat(file)).size < MIN_BYTES) continue;
    const data = await readFile(file);
    const compressed = brotliCompressSync(data, {
      params: { [constants.BROTLI_PARAM_QUALITY]: 9, [constants.BROTLI_PARAM_SIZE_HINT]: data.length },
    });
    await writeFile(`${file}.br`, compressed);
    count++;
    before += data.length;
    after += compressed.length;
  }
  return { count, before, after };
}

/**
 * The static file handler, `async function <serve>(path, cacheControl, log, req, res, headers)`: its
 * content type line and the stream it opens on the path, where the patch picks `<path>.br` instead.
 */
const HANDLER =
  /(async function \w+\((\w+),\w+,\w+,(\w+),\w+,(\w+)\)\{try\{let \w+=await (\w+)\.stat\(\2\);[^]*?)\4\["Content-Type"\]=([^;]+);let (\w+)=(\w+)\(\2\);/g;

/**
 * server-main.js's `source` with the patch; throws unless the handler matches exactly once. Only files
 * under `root` (code-server's own, where this script wrote the `.br` files) are sent precompressed: the
 * same handler serves the student's files (a webview's resources), whose `.br` siblings are theirs.
 */
export function patchStaticHandler(source, root) {
  if (!path.isAbsolute(root)) throw new Error(`the root of the precompressed files must be absolute: ${root}`);
  const under = JSON.stringify(root.endsWith('/') ? root : `${root}/`);
  const matches = [...source.matchAll(HANDLER)];
  if (matches.length !== 1)
    throw new Error(
      `the static file handler (serveFile of vs/server/node/webClientServer) matched ${matches.length} times in server-main.js, not once: update precompress.mjs for this code-server`,
    );
  return source.replace(HANDLER, (_all, head, file, req, headers, fs, type, stream, open) => {
    const accepts = `${file}.startsWith(${under})&&/\\bbr\\b/.test(${req}.headers["accept-encoding"]||"")`;
    const exists = `await ${fs}.stat(${file}+".br").then(()=>!0,()=>!1)`;
    return (
      `${head}${headers}["Content-Type"]=${type};let __br=${accepts}&&${exists};` +
      `__br&&(${headers}["Content-Encoding"]="br",${headers}.Vary="Accept-Encoding");` +
      `let ${stream}=${open}(__br?${file}+".br":${file});`
    );
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const codeServer = process.argv[2];
  if (!codeServer) throw new Error('usage: node precompress.mjs <code-server directory>');
  const out = path.join(codeServer, 'lib', 'vscode', 'out');
  const serverMain = path.join(out, 'server-main.js');
  await writeFile(serverMain, patchStaticHandler(await readFile(serverMain, 'utf8'), path.resolve(codeServer)));
  const { count, before, after } = await precompress(out);
  const mb = (n) => (n / 1e6).toFixed(1);
  console.log(`precompressed ${count} files: ${mb(before)} MB → ${mb(after)} MB of brotli`);
}
