// The session images' entrypoint, run as the shell script it is, with the IDE server and the agent
// replaced by recording stand-ins on PATH (the script's only collaborators).
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmod, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const entrypoint = path.resolve(
  path.dirname(fileURLToPath(import.meta.url)),
  '../../images/session-base/entrypoint.sh',
);

async function runEntrypoint(env: Record<string, string>, agentExit = 0) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-entrypoint-'));
  const calls = path.join(dir, 'calls.log');
  const stub = (name: string, exit: number) => `#!/bin/sh\necho "${name} $*" >> "${calls}"\nexit ${exit}\n`;
  await writeFile(path.join(dir, 'code-server'), stub('code-server', 0));
  await writeFile(path.join(dir, 'ide-cloud-agent'), stub('ide-cloud-agent', agentExit));
  await chmod(path.join(dir, 'code-server'), 0o755);
  await chmod(path.join(dir, 'ide-cloud-agent'), 0o755);
  const workspace = path.join(dir, 'workspace');
  const result = await run('sh', [entrypoint], {
    env: { PATH: `${dir}:/usr/bin:/bin`, WORKSPACE_DIR: workspace, ...env },
  });
  const lines = (await readFile(calls, 'utf8')).trim().split('\n');
  return { lines, workspace, stderr: result.stderr };
}

describe('session entrypoint', () => {
  it('with the environment strategy, clones before starting the IDE on the configured port', async () => {
    const { lines, workspace } = await runEntrypoint({ GIT_URI: 'https://git.example/repo.git', IDE_PORT: '3100' });
    assert.equal(lines.length, 2);
    assert.equal(lines[0], `ide-cloud-agent bootstrap --dir ${workspace}`);
    assert.match(lines[1]!, /^code-server --bind-addr 0\.0\.0\.0:3100 --auth none .* \S+\/workspace$/);
  });

  it('with the data bridge, leaves the clone to the agent extension inside the IDE', async () => {
    const { lines } = await runEntrypoint({
      GIT_URI: 'https://git.example/repo.git',
      SESSION_ENV_STRATEGY: 'data-bridge',
    });
    assert.deepEqual(
      lines.map((l) => l.split(' ')[0]),
      ['code-server'],
    );
  });

  it('without a repository, starts the IDE only', async () => {
    const { lines } = await runEntrypoint({});
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /^code-server --bind-addr 0\.0\.0\.0:3000 /);
  });

  it('starts the IDE even when the clone fails, and says so', async () => {
    const { lines, stderr } = await runEntrypoint({ GIT_URI: 'https://git.example/repo.git' }, 3);
    assert.deepEqual(
      lines.map((l) => l.split(' ')[0]),
      ['ide-cloud-agent', 'code-server'],
    );
    assert.match(stderr, /repository was not cloned/);
  });
});
