// The stop warning in a real VS Code host: the bridge runs as its own process (as the session image
// starts it), code-server runs the data-bridge extension reading from it, headless Chromium opens the
// workbench. A notice posted to the bridge, as the operator posts it, shows as a warning with the
// minutes left, with "Keep working"; the IDE's activity reaches the bridge, where the operator reads it.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { createVSIX } from '@vscode/vsce';
import { endProcess, spawnTracked } from '../support/processes.js';
import {
  VscodeHost,
  bundleExtension,
  freePort,
  installVscodeHost,
  waitFor,
  type VscodeHostInstall,
} from '../support/vscode-host.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const TOKEN = `bridge-${randomUUID()}`;
const AUTH = { authorization: `Bearer ${TOKEN}` };

/**
 * The data-bridge .vsix as `npm run package -w extension` makes it, staged in `dir`, so the shared
 * extension/dist is left to the suites that build it.
 */
async function packageBridgeExtension(dir: string): Promise<string> {
  const staging = path.join(dir, 'extension');
  for (const file of ['package.json', 'README.md', 'LICENSE', '.vscodeignore', 'media']) {
    await cp(path.join(ROOT, 'extension', file), path.join(staging, file), { recursive: true });
  }
  await bundleExtension(path.join(ROOT, 'extension/src/extension.ts'), staging);
  const vsix = path.join(dir, 'data-bridge.vsix');
  await createVSIX({ cwd: staging, packagePath: vsix, dependencies: false, allowMissingRepository: true });
  return vsix;
}

describe('the stop notice in a real VS Code host (e2e)', function () {
  this.timeout(5 * 60_000);
  let install: VscodeHostInstall;
  let host: VscodeHost | undefined;
  let bridgeProcess: ChildProcess | undefined;
  let buildDir: string;
  let bridge: string;

  before(async function () {
    this.timeout(20 * 60_000); // a brand-new machine installs chromium, Node 24 and code-server first
    install = await installVscodeHost();
    buildDir = await mkdtemp(path.join(os.tmpdir(), 'stop-notice-e2e-'));
    const vsix = await packageBridgeExtension(buildDir);
    await build({
      entryPoints: [path.join(ROOT, 'extension/src/process.ts')],
      outfile: path.join(buildDir, 'bridge.mjs'),
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      logLevel: 'warning',
    });
    const port = await freePort();
    bridge = `http://127.0.0.1:${port}`;
    const env = { DATA_BRIDGE_ENABLED: 'true', DATA_BRIDGE_PORT: String(port), DATA_BRIDGE_TOKEN: TOKEN };
    bridgeProcess = spawnTracked('data bridge process', process.execPath, [path.join(buildDir, 'bridge.mjs')], {
      env: { PATH: process.env.PATH, ...env },
      stdio: 'ignore',
    });
    await waitFor('the bridge process to answer /health', async () => (await fetch(`${bridge}/health`)).ok, {
      timeoutMs: 30_000,
    });
    host = await VscodeHost.start({
      install,
      name: 'stop-notice',
      extensions: [vsix],
      env: { ...env, DATA_BRIDGE_URL: bridge },
    });
    await host.openWorkbench();
  });
  after(async function () {
    this.timeout(60_000);
    await host?.stop();
    if (bridgeProcess) await endProcess(bridgeProcess, 'SIGKILL');
    if (buildDir) await rm(buildDir, { recursive: true, force: true });
  });

  it("shows the notice with the minutes left, and the IDE's activity reaches the bridge", async () => {
    const posted = await fetch(`${bridge}/notice`, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'Idle', secondsLeft: 300 }),
    });
    assert.equal(posted.status, 200);
    const page = host!.page;
    const message = page.locator('.notification-list-item-message', { hasText: 'stops in about 5 minutes' });
    await message.first().waitFor({ timeout: 90_000 });
    assert.match(
      await message.first().innerText(),
      /This session has been idle and stops in about 5 minutes\. Any activity in the IDE keeps it running\./,
    );
    await page.locator('.notification-toast .monaco-button', { hasText: 'Keep working' }).first().click();
    // The IDE's activity (the window's focus, the click) reaches the bridge, where the operator reads it.
    await waitFor(
      'the activity to reach the bridge',
      async () => {
        const answer = (await (await fetch(`${bridge}/activity`, { headers: AUTH })).json()) as {
          secondsSinceActivity: number | null;
        };
        return answer.secondsSinceActivity !== null;
      },
      { timeoutMs: 30_000 },
    );
  });
});
