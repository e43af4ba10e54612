// The agent's CLI front as a session image runs it: the built bin as a child process, against a real
// git smart-HTTP server and the stand-in learning platform. Exit codes, plain log lines, and no secret
// in anything it prints.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildAgent } from '../../agent/scripts/build.js';
import { assertNoSecrets, makeSandbox, type Sandbox } from '../../agent/test/helpers.js';
import { startGitServer, type GitServer } from '../../scripts/start/git-server.js';
import { startLearningPlatform, type LearningPlatform } from '../support/learning-platform.js';

const BIN = fileURLToPath(new URL('../../agent/bin/ide-cloud-agent.mjs', import.meta.url));
const PASSWORD = 'cli-pw-73b1f9';
const PLATFORM_TOKEN = 'cli-lms-token-e2a4';
const PARTICIPATION_TOKEN = 'cli-vcs-token-91cd';

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runAgent(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd, env, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr });
    });
  });
}

describe('agent CLI (ide-cloud-agent)', function () {
  this.timeout(60_000);
  let git: GitServer;
  let platform: LearningPlatform;
  let sandbox: Sandbox;
  let repoUrl: string;
  const output: string[] = [];
  const secrets = [PASSWORD, PLATFORM_TOKEN, PARTICIPATION_TOKEN];

  before(async () => {
    await buildAgent();
    git = await startGitServer({ users: { student: PASSWORD, stud02: PARTICIPATION_TOKEN } });
    repoUrl = await git.createRepository('course/cli.git', { files: { 'hello.txt': 'hello\n' } });
    platform = await startLearningPlatform();
    platform.validTokens.add(PLATFORM_TOKEN);
    platform.participations.add('7');
    platform.participationTokens.set('7', PARTICIPATION_TOKEN);
    sandbox = await makeSandbox();
  });
  after(async () => {
    await Promise.all([git.close(), platform.close()]);
    await sandbox.remove();
  });

  async function agent(args: string[], cwd: string, env: NodeJS.ProcessEnv): Promise<Run> {
    await mkdir(cwd, { recursive: true });
    const result = await runAgent(args, cwd, { ...sandbox.env, ...env });
    output.push(result.stdout, result.stderr);
    return result;
  }

  it('clones GIT_URI into the current directory and sets the git identity: exit 0', async () => {
    const ws = path.join(sandbox.dir, 'ws');
    const result = await agent([], ws, {
      GIT_URI: git.urlWithCredentials('course/cli.git', 'student', PASSWORD),
      GIT_USER: 'Cli Student',
      GIT_MAIL: 'cli@example.org',
      PLATFORM_TOKEN,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(await readFile(path.join(ws, 'hello.txt'), 'utf8'), 'hello\n');
    const lines = result.stdout.trim().split('\n');
    assert.deepEqual(lines, [
      'git user.name and user.email configured',
      `cloning ${repoUrl} into ${ws}…`,
      'done: repository cloned',
      'done',
    ]);
    assert.equal(result.stderr, '');
    const globalConfig = await readFile(sandbox.globalConfig, 'utf8');
    assert.match(globalConfig, /name = Cli Student/);
    assert.match(globalConfig, /email = cli@example.org/);
    assertNoSecrets(await readFile(path.join(ws, '.git', 'config'), 'utf8'), secrets);
  });

  it('runs again on the same workspace without touching it (exit 0), and honours --dir', async () => {
    const ws = path.join(sandbox.dir, 'ws');
    const result = await agent(['bootstrap', '--dir', ws], sandbox.dir, {
      GIT_URI: git.urlWithCredentials('course/cli.git', 'student', PASSWORD),
    });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /already holds this repository; left as it is/);
  });

  it('fails with exit 1 and says what to do when the private repository gets no credential', async () => {
    const result = await agent([], path.join(sandbox.dir, 'ws-anon'), { GIT_URI: repoUrl, PLATFORM_TOKEN });
    assert.equal(result.code, 1);
    assert.match(
      result.stderr,
      /^error: the repository http:\/\/127\.0\.0\.1:\d+\/course\/cli\.git needs a credential and the clone URL carries none\. Embed it in the URL as https:\/\/<user>:<token>@host\/path\.git, or use the participation clone\n$/,
    );
  });

  it('fails with exit 1 when the repository refuses the credential, printing neither it nor the URL with it', async () => {
    const wrong = git.urlWithCredentials('course/cli.git', 'student', 'cli-wrong-pw-55');
    const result = await agent([], path.join(sandbox.dir, 'ws-wrong'), { GIT_URI: wrong });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /refused the credential in the clone URL/);
    assertNoSecrets(result.stdout + result.stderr, ['cli-wrong-pw-55', wrong]);
  });

  it('clones a participation with a token from the platform (exit 0) and reports an expired token (exit 1)', async () => {
    const ws = path.join(sandbox.dir, 'ws-part');
    const env = { PLATFORM_URL: platform.url, PLATFORM_TOKEN, GIT_USER: 'stud02' };
    const ok = await agent(['participation', '--participation-id', '7', '--repository', repoUrl], ws, env);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(await readFile(path.join(ws, 'hello.txt'), 'utf8'), 'hello\n');
    assert.match(ok.stdout, new RegExp(`done: ${repoUrl.replace(/[.]/g, '\\.')} cloned into`));

    const expired = await agent(
      ['participation', '--participation-id', '7', '--repository', repoUrl],
      path.join(sandbox.dir, 'ws-exp'),
      {
        ...env,
        PLATFORM_TOKEN: 'cli-lms-expired-77',
      },
    );
    assert.equal(expired.code, 1);
    assert.match(expired.stderr, /rejected PLATFORM_TOKEN \(HTTP 401\).*Open the IDE again from the learning platform/);
    assertNoSecrets(expired.stdout + expired.stderr, ['cli-lms-expired-77']);
  });

  it('exits 2 with the usage on a wrong command line', async () => {
    const result = await agent(['participation'], sandbox.dir, {});
    assert.equal(result.code, 2);
    assert.match(result.stderr, /needs --participation-id and --repository/);
    assert.match(result.stderr, /Usage:/);
    const help = await agent(['--help'], sandbox.dir, {});
    assert.equal(help.code, 0);
    assert.match(help.stdout, /ide-cloud-agent participation --participation-id ID/);
  });

  it('printed no secret in any run', () => {
    assert.ok(output.join('').length > 0);
    assertNoSecrets(output.join('\n'), secrets);
  });
});
