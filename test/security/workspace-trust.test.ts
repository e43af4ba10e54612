// Attack 15 of issue 15: a deep link can name any repository, and a repository can carry a task that
// runs when its folder opens (.vscode/tasks.json, runOn folderOpen), with the student's tokens in reach.
// The session IDE keeps workspace trust on, so nothing of the repository runs before the student
// trusts it. Replayed in a real code-server: with trust off (as the images had it) the task runs; with
// the images' setting it does not.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { VscodeHost, installVscodeHost, waitFor, type VscodeHostInstall } from '../support/vscode-host.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Starts a host whose workspace holds a folder-open task that writes `marker`; opens the workbench. */
async function hostWithTask(install: VscodeHostInstall, name: string, trust: boolean): Promise<[VscodeHost, string]> {
  const host = await VscodeHost.start({
    install,
    name,
    // The attack needs automatic tasks allowed, as a student's settings may have them.
    settings: { 'security.workspace.trust.enabled': trust, 'task.allowAutomaticTasks': 'on' },
  });
  const marker = path.join(host.runDir, 'task-ran');
  await mkdir(path.join(host.workspaceDir, '.vscode'), { recursive: true });
  await writeFile(
    path.join(host.workspaceDir, '.vscode', 'tasks.json'),
    JSON.stringify({
      version: '2.0.0',
      tasks: [
        {
          label: 'exfiltrate',
          type: 'process',
          command: 'touch',
          args: [marker],
          runOptions: { runOn: 'folderOpen' },
        },
      ],
    }),
  );
  await host.openWorkbench();
  return [host, marker];
}

describe('security: workspace trust in the session IDE (15)', function () {
  this.timeout(10 * 60_000);
  let install: VscodeHostInstall;
  const hosts: VscodeHost[] = [];

  before(async function () {
    this.timeout(20 * 60_000); // a brand-new machine installs chromium, Node and code-server first
    install = await installVscodeHost();
  });
  after(async () => {
    for (const host of hosts) await host.stop();
  });

  it('the session image starts code-server without turning workspace trust off', async () => {
    const image = path.join(ROOT, 'images', 'session-base');
    const entrypoint = await readFile(path.join(image, 'entrypoint.sh'), 'utf8');
    const starter = await readFile(path.join(image, 'start-code-server.mjs'), 'utf8');
    // The entrypoint's arguments reach code-server through the starter, which adds none of its own.
    assert.match(entrypoint, /^exec node "\$\{START_CODE_SERVER_SCRIPT:-\/opt\/ide-cloud\/start-code-server\.mjs\}"/m);
    for (const text of [entrypoint, starter]) {
      assert.doesNotMatch(text, /disable-workspace-trust/);
      assert.doesNotMatch(text, /security\.workspace\.trust\.enabled/);
    }
  });

  it("a repository's folder-open task runs with trust off, and does not with trust on", async () => {
    const [open, ranMarker] = await hostWithTask(install, 'trust-off', false);
    hosts.push(open);
    const started = Date.now();
    await waitFor('the folder-open task to run without workspace trust', async () => existsSync(ranMarker), {
      timeoutMs: 60_000,
    });
    const took = Date.now() - started;

    const [trusting, marker] = await hostWithTask(install, 'trust-on', true);
    hosts.push(trusting);
    // Three times as long as the task took to run without trust, and at least 10 s.
    const deadline = Date.now() + Math.max(10_000, 3 * took);
    while (Date.now() < deadline) {
      assert.equal(existsSync(marker), false, 'the task ran before the workspace was trusted');
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  });
});
