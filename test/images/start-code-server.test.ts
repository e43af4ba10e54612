// The session image's start of code-server (images/session-base/start-code-server.mjs), with the
// code-server the image installs (the same version as the tests' VS Code host): one copy of code-server
// serves, with the arguments and the config file code-server's own parser reads; its VS Code server is
// loaded before anyone asks for a page; a SIGTERM stops the server and the starter with it. The real
// node's end-to-end suite starts every session's IDE through it.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../scripts/cluster/control-plane.js';
import { endProcess, spawnTracked } from '../support/processes.js';
import { installVscodeHost } from '../support/vscode-host.js';

const SCRIPT = path.resolve(import.meta.dirname, '..', '..', 'images', 'session-base', 'start-code-server.mjs');

/** Resolves once `child`'s standard output has shown a line matching `pattern` (rejects after `timeoutMs`). */
function outputShows(child: ChildProcess, output: () => string, pattern: RegExp, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (!pattern.test(output())) return;
      clearTimeout(timer);
      child.stdout!.off('data', check);
      resolve();
    };
    const timer = setTimeout(() => {
      child.stdout!.off('data', check);
      reject(new Error(`no line matching ${pattern} within ${timeoutMs} ms:\n${output()}`));
    }, timeoutMs);
    child.stdout!.on('data', check);
    check();
  });
}

/** The pids of `pid`'s children (Linux). */
async function childrenOf(pid: number): Promise<number[]> {
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]);
  const lists = await Promise.all(
    tasks.map((t) => readFile(`/proc/${pid}/task/${t}/children`, 'utf8').catch(() => '')),
  );
  return lists.flatMap((l) => l.split(' ').filter(Boolean).map(Number));
}

async function commandOf(pid: number): Promise<string> {
  return (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0').join(' ');
}

function getPage(port: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) =>
    http
      .get({ host: '127.0.0.1', port, path: '/' }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject),
  );
}

describe('session image: code-server started without its wrapper process', function () {
  this.timeout(10 * 60_000);

  it('serves one copy of code-server, its VS Code server loaded before any page is asked, and stops on SIGTERM', async () => {
    const install = await installVscodeHost();
    const codeServer = path.resolve(path.dirname(install.codeServerEntry), '..', '..');
    const home = await mkdtemp(path.join(os.tmpdir(), 'start-code-server-'));
    // The config file's values reach the server too (code-server's parser reads it): its name.
    await mkdir(path.join(home, '.config', 'code-server'), { recursive: true });
    await writeFile(path.join(home, '.config', 'code-server', 'config.yaml'), 'app-name: Exercise IDE\n');
    const port = await freePort();
    const starter = spawnTracked(
      'start-code-server.mjs',
      install.node,
      [SCRIPT, '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check'],
      {
        env: { PATH: process.env.PATH, HOME: home, CODE_SERVER_DIR: codeServer },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let output = '';
    starter.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    starter.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    try {
      await outputShows(starter, () => output, /HTTP server listening on http:\/\/127\.0\.0\.1:\d+/, 120_000);
      // Asked for by the starter itself: the VS Code server says it started its extension host agent
      // once loaded, and no page has been asked for here yet.
      await outputShows(starter, () => output, /Extension host agent started/, 60_000);

      const servers = await childrenOf(starter.pid!);
      assert.equal(servers.length, 1, `one child: ${servers.join(', ')}`);
      assert.match(await commandOf(servers[0]!), /code-server\/out\/node\/entry(\.js)? *$/);
      // Nothing below it is a second code-server (its own children are the VS Code server's helpers).
      for (const pid of await childrenOf(servers[0]!))
        assert.doesNotMatch(await commandOf(pid), /out\/node\/entry/, 'a second code-server');

      const page = await getPage(port);
      assert.equal(page.status, 200);
      assert.ok(page.body.includes('Exercise IDE'), 'the config file’s app-name');

      const exited = new Promise<number | null>((resolve) => starter.once('exit', (code) => resolve(code)));
      process.kill(starter.pid!, 'SIGTERM');
      assert.equal(await exited, 0, output);
      const deadline = Date.now() + 10_000;
      while ((await commandOf(servers[0]!)) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.equal(await commandOf(servers[0]!), '', 'the server stopped with the starter');
    } finally {
      await endProcess(starter, 'SIGKILL');
      await rm(home, { recursive: true, force: true });
    }
  });
});
