// The session image's precompressed workbench (images/session-base/precompress.mjs): VS Code's static
// file handler of the code-server the image installs (the same version as the tests' VS Code host) is
// patched exactly once, and a patched handler sends `<file>.br` with `Content-Encoding: br` to a client
// that accepts br, the file itself otherwise. The real node's end-to-end suite checks it in the image.
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { brotliDecompressSync } from 'node:zlib';
// @ts-expect-error: a build script of the image, plain JavaScript without types
import { patchStaticHandler, precompress } from '../../images/session-base/precompress.mjs';
import { installVscodeHost } from '../support/vscode-host.js';

const patch = patchStaticHandler as (source: string, root: string) => string;

describe('session image: the workbench precompressed', function () {
  this.timeout(10 * 60_000);

  it("patches the installed code-server's static file handler exactly once", async () => {
    const install = await installVscodeHost();
    // The entry is <code-server>/out/node/entry.js.
    const codeServer = path.resolve(path.dirname(install.codeServerEntry), '..', '..');
    const serverMain = path.join(codeServer, 'lib', 'vscode', 'out', 'server-main.js');
    const patched = patch(await readFile(serverMain, 'utf8'), codeServer);
    assert.equal(patched.match(/\+"\.br"/g)?.length, 2, 'the .br file is looked for and opened');
    assert.throws(
      () => patch(patched, codeServer),
      /matched 0 times/,
      'a handler patched already does not match again',
    );
    assert.throws(() => patch('function other(){}', codeServer), /update precompress\.mjs/);
  });

  it('a patched handler sends the .br file to a client that accepts br, the file to one that does not', async () => {
    // The handler's shape, as minified in server-main.js: serve(path, cacheControl, log, req, res, headers).
    const handler = `import{createReadStream as HX,promises as Jh}from"fs";
export async function gA(r,t,e,n,o,i){try{let s=await Jh.stat(r);i["Content-Type"]="text/javascript"||"text/plain";let a=HX(r);await new Promise((l,c)=>{a.on("error",c),a.on("open",()=>{o.writeHead(200,i),a.pipe(o),a.on("end",l)})})}catch(s){o.writeHead(404),o.end()}}`;
    const dir = await mkdtemp(path.join(os.tmpdir(), 'precompress-'));
    try {
      const text = 'console.log("workbench");\n'.repeat(1000);
      await writeFile(path.join(dir, 'workbench.js'), text);
      await writeFile(path.join(dir, 'small.js'), 'x');
      const { count } = (await precompress(dir)) as { count: number };
      assert.equal(count, 1, 'only files over 8 KiB');
      await writeFile(path.join(dir, 'handler.mjs'), patch(handler, dir));
      const { gA } = (await import(path.join(dir, 'handler.mjs'))) as {
        gA(...args: unknown[]): Promise<void>;
      };
      const server = http.createServer((req, res) => void gA(path.join(dir, 'workbench.js'), 0, console, req, res, {}));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      const get = (encoding: string) =>
        new Promise<{ headers: http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) =>
          http
            .get({ port, host: '127.0.0.1', headers: { 'accept-encoding': encoding } }, (res) => {
              const chunks: Buffer[] = [];
              res.on('data', (c: Buffer) => chunks.push(c));
              res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
            })
            .on('error', reject),
        );
      const br = await get('gzip, deflate, br, zstd');
      assert.equal(br.headers['content-encoding'], 'br');
      assert.equal(br.headers.vary, 'Accept-Encoding');
      assert.equal(brotliDecompressSync(br.body).toString(), text);
      const plain = await get('gzip');
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.equal(plain.body.toString(), text);
      server.close();
      // A file outside code-server's own directory (a student's, through the same handler) goes as it is.
      const elsewhere = patch(handler, path.join(dir, 'code-server'));
      await writeFile(path.join(dir, 'elsewhere.mjs'), elsewhere);
      const other = (await import(path.join(dir, 'elsewhere.mjs'))) as { gA(...args: unknown[]): Promise<void> };
      const studentServer = http.createServer(
        (req, res) => void other.gA(path.join(dir, 'workbench.js'), 0, console, req, res, {}),
      );
      await new Promise<void>((resolve) => studentServer.listen(0, '127.0.0.1', resolve));
      const studentPort = (studentServer.address() as AddressInfo).port;
      const asIs = await new Promise<http.IncomingHttpHeaders>((resolve, reject) =>
        http
          .get({ port: studentPort, host: '127.0.0.1', headers: { 'accept-encoding': 'br' } }, (res) => {
            res.resume();
            resolve(res.headers);
          })
          .on('error', reject),
      );
      assert.equal(asIs['content-encoding'], undefined, 'not sent precompressed from outside the root');
      studentServer.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
