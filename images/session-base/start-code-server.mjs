#!/usr/bin/env node
// Starts code-server's server, and asks it for its first page the moment it listens.
//
// code-server's own command is a wrapper: a process that loads the whole server (about 0.2 s on a
// node) only to parse the arguments, then forks the process that serves, and relays its output. This
// is that parent with nothing else loaded: it parses the arguments with code-server's own parser
// (out/node/cli.js, config file and defaults included) and answers the server's handshake with them,
// code-server's protocol (out/node/wrapper.js). The IDE listens sooner at every pod start.
//
// code-server loads its VS Code server on the first page request, not when it starts (about 0.5 s, more
// on a busy node): the line the server prints once it listens starts that request here, so the
// student's first page finds it loaded.
//
// The image's build starts code-server through this script (its compile-cache step), so a code-server
// whose handshake changed fails the build, not a student's start. Only code-server's serving mode:
// `code-server --install-extension` and the like keep code-server's own command.
//
// Usage: node start-code-server.mjs <code-server's arguments>
import { fork } from 'node:child_process';
import console from 'node:console';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { URL } from 'node:url';

const LISTENING = /HTTP server listening on (\S+)/;

const dir = process.env.CODE_SERVER_DIR ?? '/usr/local/lib/node_modules/code-server';
const entry = path.join(dir, 'out', 'node', 'entry.js');
const cli = createRequire(entry)('./cli.js');
const parsed = cli.parse(process.argv.slice(2));
// As code-server's parent does, before the fork: the defaults also set what the server inherits (its
// session socket, the log level) and take passwords out of the environment.
const args = await cli.setDefaults(parsed, await cli.readConfigFile(parsed.config));

const server = fork(entry, [], {
  env: { ...process.env, CODE_SERVER_PARENT_PID: String(process.pid), NODE_EXEC_PATH: process.execPath },
  stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
});
server.on('message', (message) => {
  if (message?.type === 'handshake') server.send({ type: 'handshake', args });
});
server.stderr.pipe(process.stderr);
// The output up to the listening line, whole lines only (a chunk may end inside one); a start that
// printed this much without it is not waited for (the student's first page loads the VS Code server).
const WATCHED_BYTES = 64 * 1024;
let before = '';
server.stdout.on('data', (chunk) => {
  process.stdout.write(chunk);
  if (before === undefined) return;
  before += chunk.toString();
  const address = LISTENING.exec(before.slice(0, before.lastIndexOf('\n') + 1))?.[1];
  if (address) askFirstPage(address);
  else if (before.length > WATCHED_BYTES) console.error('start-code-server: no line says the server listens');
  else return;
  before = undefined;
});
server.on('exit', (code, signal) => {
  process.exitCode = code ?? 128 + (os.constants.signals[signal] ?? 0);
});
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(signal, () => server.kill(signal));

/** The page asked for once over loopback (or the socket); any answer means the VS Code server is loaded. */
function askFirstPage(address) {
  const url = address.startsWith('/') ? undefined : new URL(address);
  const loopback = { '0.0.0.0': '127.0.0.1', '[::]': '::1' };
  const target = url
    ? { host: (loopback[url.hostname] ?? url.hostname).replace(/^\[(.*)\]$/, '$1'), port: url.port }
    : { socketPath: address };
  http
    .get({ ...target, path: '/' }, (response) => response.resume())
    .on('error', (error) => console.error(`start-code-server: the first page was not asked for: ${error.message}`));
}
