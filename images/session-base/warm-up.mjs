#!/usr/bin/env node
// code-server loads its VS Code server on the first page request, not when it starts (about 0.2 s, more
// on a busy node): this asks for the page once, as soon as the IDE listens, so that the student's first
// page (a warm instance's student comes minutes later) finds it loaded. Started in the background by the
// entrypoint; gives up after two minutes.
//
// Usage: node warm-up.mjs <port>
/* global fetch */
import process from 'node:process';
import { setTimeout as sleep } from 'node:timers/promises';

const port = Number(process.argv[2] ?? '3000');
const deadline = Date.now() + 120_000;
while (Date.now() < deadline) {
  try {
    // Any answer (the workbench page) means the server is loaded.
    const response = await fetch(`http://127.0.0.1:${port}/`, { redirect: 'manual' });
    await response.arrayBuffer();
    break;
  } catch {
    // Not listening yet.
    await sleep(100);
  }
}
