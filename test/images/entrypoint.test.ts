// The session images' entrypoint, run as the shell script it is, with the IDE server and the agent
// replaced by recording stand-ins on PATH (the script's only collaborators).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { eventually } from '../support/kube.js';

const run = promisify(execFile);
const entrypoint = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../images/session-base/entrypoint.sh',
);

const FIRST_SCREEN = 'node /opt/ide-cloud/first-screen.mjs ';
/** The IDE's start: code-server's server through start-code-server.mjs. */
const IDE = 'node /opt/ide-cloud/start-code-server.mjs ';

/** `lines`: the calls but the first-screen script's, which every start makes (`firstScreen`). */
async function runEntrypoint(
  env: Record<string, string> | ((home: string) => Promise<Record<string, string>>),
  agentExit = 0,
  firstScreenExit = 0,
) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-entrypoint-'));
  const calls = path.join(dir, 'calls.log');
  // Each stand-in also records the niceness it runs at (`<name>.nice`).
  const stub = (name: string, exit: number | string) =>
    `#!/bin/sh\nnice > "${path.join(dir, name)}.nice"\necho "${name} $* \${DATA_BRIDGE_URL:+(DATA_BRIDGE_URL=$DATA_BRIDGE_URL)}" >> "${calls}"\nexit ${exit}\n`;
  for (const [name, exit] of [
    ['ide-cloud-agent', agentExit],
    // node runs the first-screen script (which may fail here) and, last, the IDE.
    ['node', `$(case "$1" in */first-screen.mjs) echo ${firstScreenExit} ;; *) echo 0 ;; esac)`],
  ] as const) {
    await writeFile(path.join(dir, name), stub(name, exit));
    await chmod(path.join(dir, name), 0o755);
  }
  const workspace = path.join(dir, 'workspace');
  const result = await run('sh', [entrypoint], {
    env: {
      PATH: `${dir}:/usr/bin:/bin`,
      HOME: dir,
      WORKSPACE_DIR: workspace,
      ...(typeof env === 'function' ? await env(dir) : env),
    },
  });
  const all = async () =>
    (await readFile(calls, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => l.trimEnd());
  const read = async () => (await all()).filter((l) => !l.startsWith(FIRST_SCREEN));
  const calls0 = await all();
  return {
    lines: await read(),
    read,
    calls: calls0,
    firstScreen: calls0.filter((l) => l.startsWith(FIRST_SCREEN)),
    all,
    workspace,
    home: dir,
    stderr: result.stderr,
  };
}

describe('session entrypoint', () => {
  it("marks the work folder safe for git once (a claim's root belongs to whoever provisioned it)", async () => {
    const { workspace, home } = await runEntrypoint({});
    const safe = async () =>
      (await run('git', ['config', '--global', '--get-all', 'safe.directory'], { env: { HOME: home } })).stdout;
    assert.equal(await safe(), `${workspace}\n`);
    await run('sh', [entrypoint], {
      env: { PATH: `${home}:/usr/bin:/bin`, HOME: home, WORKSPACE_DIR: workspace },
    });
    assert.equal(await safe(), `${workspace}\n`, 'not added twice when the container starts again');
  });

  it('with the environment strategy, clones beside the IDE it starts on the configured port', async () => {
    const { read, workspace } = await runEntrypoint({ GIT_URI: 'https://git.example/repo.git', IDE_PORT: '3100' });
    // The clone runs in the background: its line may come before or after the IDE's.
    const lines = await eventually(async () => {
      const all = await read();
      assert.equal(all.length, 2, all.join('\n'));
      return all;
    }, 10_000);
    assert.ok(lines.includes(`ide-cloud-agent bootstrap --dir ${workspace}`), lines.join('\n'));
    assert.match(
      lines.find((l) => l.startsWith(IDE))!,
      /^node \/opt\/ide-cloud\/start-code-server\.mjs --bind-addr 0\.0\.0\.0:3100 --auth none .* --ignore-last-opened$/,
    );
    // No folder of its own: the page opens the work folder without code-server's redirect (first-screen.mjs).
    assert.ok(!lines.find((l) => l.startsWith(IDE))!.includes(workspace), lines.join('\n'));
  });

  it('with the data bridge strategy but no bridge, leaves the clone to the agent extension inside the IDE', async () => {
    const { lines } = await runEntrypoint({
      GIT_URI: 'https://git.example/repo.git',
      SESSION_ENV_STRATEGY: 'data-bridge',
    });
    assert.deepEqual(
      lines.map((l) => l.split(' ')[0]),
      ['node'],
    );
  });

  it('with the data bridge on, starts the bridge process and tells the IDE where it serves', async () => {
    const { lines, read } = await runEntrypoint({
      SESSION_ENV_STRATEGY: 'data-bridge',
      DATA_BRIDGE_ENABLED: 'TRUE',
      DATA_BRIDGE_PORT: '16300',
    });
    assert.match(
      lines.find((l) => l.startsWith(IDE))!,
      /\(DATA_BRIDGE_URL=http:\/\/127\.0\.0\.1:16300\)$/,
    );
    // Started in the background: it may record its start after the IDE's.
    const deadline = Date.now() + 10_000;
    let all = lines;
    while (!all.includes('node /opt/ide-cloud/bridge/bridge.mjs') && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      all = await read();
    }
    assert.ok(all.includes('node /opt/ide-cloud/bridge/bridge.mjs'), all.join('\n'));
    const off = await runEntrypoint({ SESSION_ENV_STRATEGY: 'data-bridge', DATA_BRIDGE_ENABLED: 'false' });
    assert.deepEqual(
      off.lines.map((l) => l.split(' ')[0]),
      ['node'],
    );
  });

  it('with the data bridge on, starts the agent beside the IDE to clone once the values land there', async () => {
    const token = 'bridge-token-entrypoint-0123';
    // The agent fails here: the IDE starts all the same.
    const { lines, read, workspace } = await runEntrypoint(
      { SESSION_ENV_STRATEGY: 'data-bridge', DATA_BRIDGE_ENABLED: 'true', DATA_BRIDGE_TOKEN: token },
      3,
    );
    assert.ok(
      lines.some((l) => l.startsWith(IDE)),
      lines.join('\n'),
    );
    // In the background: it may record its start after the IDE's.
    const deadline = Date.now() + 10_000;
    let all = lines;
    while (!all.some((l) => l.startsWith('ide-cloud-agent ')) && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      all = await read();
    }
    assert.ok(
      all.includes(
        `ide-cloud-agent bootstrap --dir ${workspace} --from-bridge (DATA_BRIDGE_URL=http://127.0.0.1:16281)`,
      ),
      all.join('\n'),
    );
    assert.ok(!all.join('\n').includes(token), 'the token is in no argument');
    // The environment strategy cloned before the IDE: no second agent.
    const env = await runEntrypoint({ GIT_URI: 'https://git.example/repo.git', DATA_BRIDGE_ENABLED: 'true' });
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(
      (await env.read()).filter((l) => l.startsWith('ide-cloud-agent')),
      [`ide-cloud-agent bootstrap --dir ${env.workspace}`],
    );
  });

  it('without a repository, starts the IDE only', async () => {
    const { lines } = await runEntrypoint({});
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /^node \/opt\/ide-cloud\/start-code-server\.mjs --bind-addr 0\.0\.0\.0:3000 /);
  });

  it('starts the IDE even when the clone fails, and says so', async () => {
    const { read, stderr } = await runEntrypoint({ GIT_URI: 'https://git.example/repo.git' }, 3);
    const lines = await eventually(async () => {
      const all = await read();
      assert.equal(all.length, 2, all.join('\n'));
      return all;
    }, 10_000);
    assert.deepEqual(lines.map((l) => l.split(' ')[0]).sort(), ['ide-cloud-agent', 'node']);
    assert.match(stderr, /repository was not cloned/);
  });

  it("prepares the IDE's first screen for the work folder it is given, before anything else starts", async () => {
    const { calls, firstScreen, workspace, home } = await runEntrypoint({ GIT_URI: 'https://git.example/repo.git' });
    assert.deepEqual(firstScreen, [
      `${FIRST_SCREEN}--code-server /usr/local/lib/node_modules/code-server --work-folder ${workspace} ` +
        `--user-data-dir ${home}/.local/share/code-server`,
    ]);
    assert.ok(calls[0]?.startsWith(FIRST_SCREEN), calls.join('\n'));
  });

  it("checks the first screen with the script's own marker, page and setting (first-screen.mjs)", async () => {
    const firstScreen = await readFile(path.join(path.dirname(entrypoint), 'first-screen.mjs'), 'utf8');
    const script = await readFile(entrypoint, 'utf8');
    const marker = /export const BEGIN = '([^']+)'/.exec(firstScreen)?.[1];
    const page = /export const WORKBENCH_HTML = '([^']+)'/.exec(firstScreen)?.[1];
    assert.ok(marker && script.includes(`grep -qF '${marker}'`), 'the trust module marker');
    assert.ok(page && script.includes(`"$CODE_SERVER_DIR/${page}"`), 'the page');
    assert.ok(firstScreen.includes("'chat.disableAIFeatures': true") && script.includes(`'"chat.disableAIFeatures"'`));
  });

  it('runs no script for the first screen of the folder and user data directory the image was built for', async () => {
    /**
     * A home whose image was built for `folder` and the default user data directory: the page's trust
     * module and the machine settings in place, or one of them not.
     */
    const builtFor =
      (folder: string, { page = true, settings = true } = {}) =>
      async (home: string) => {
        const userData = path.join(home, '.local/share/code-server');
        const codeServer = path.join(home, 'code-server-package');
        await writeFile(path.join(home, 'built-for'), `${path.join(home, folder)}\n${userData}\n`);
        const workbench = path.join(codeServer, 'lib/vscode/out/vs/code/browser/workbench');
        await mkdir(workbench, { recursive: true });
        await writeFile(
          path.join(workbench, 'workbench.html'),
          page ? '<!-- ide-cloud: trust the work folder --><script></script>' : '<script></script>',
        );
        await mkdir(path.join(userData, 'Machine'), { recursive: true });
        await writeFile(
          path.join(userData, 'Machine/settings.json'),
          settings ? '{"workbench.startupEditor": "none", "chat.disableAIFeatures": true}' : '{"editor.fontSize": 16}',
        );
        return { FIRST_SCREEN_BUILT_FOR: path.join(home, 'built-for'), CODE_SERVER_DIR: codeServer };
      };
    const built = await runEntrypoint(builtFor('workspace'));
    assert.deepEqual(built.firstScreen, [], 'built for this folder: nothing to prepare');
    assert.match(built.lines[0]!, /^node \/opt\/ide-cloud\/start-code-server\.mjs .* --ignore-last-opened$/);
    // Another folder, a page without the trust module, settings without the first screen's: prepared.
    assert.equal((await runEntrypoint(builtFor('elsewhere'))).firstScreen.length, 1);
    assert.equal((await runEntrypoint(builtFor('workspace', { page: false }))).firstScreen.length, 1);
    assert.equal((await runEntrypoint(builtFor('workspace', { settings: false }))).firstScreen.length, 1);
  });

  it("lets the environment strategy's clone yield the CPU to the IDE's start", async () => {
    const { read, home } = await runEntrypoint({ GIT_URI: 'https://git.example/repo.git' });
    await eventually(
      async () =>
        assert.ok(
          (await read()).some((l) => l.startsWith('ide-cloud-agent')),
          'no agent line yet',
        ),
      10_000,
    );
    const own = Number((await run('nice')).stdout);
    const agent = Number(await readFile(path.join(home, 'ide-cloud-agent.nice'), 'utf8'));
    assert.equal(agent, Math.min(own + 10, 19));
  });

  it('starts the IDE even when the first screen cannot be prepared, and says so', async () => {
    const { lines, firstScreen, stderr } = await runEntrypoint({}, 0, 1);
    assert.equal(firstScreen.length, 1);
    // code-server gets the folder then: its redirect opens it (restricted), not the image's own.
    assert.match(lines[0]!, /^node \/opt\/ide-cloud\/start-code-server\.mjs .* --ignore-last-opened \S+\/workspace$/);
    assert.match(stderr, /could not prepare the IDE's first screen; \S+ may open in Restricted Mode/);
  });
});
