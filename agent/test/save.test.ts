// Saving the student's work before a stop, against a real git server and the stand-in learning
// platform: the uncommitted change lands on a new branch of their repository, their own branch and
// files stay as they were, and no token reaches a log line, the repository's config or an argument.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { AgentError, bootstrapWorkspace, cloneParticipation, saveWork, savedBranchName } from '../src/core/index.js';
import { startGitServer, type GitServer } from '../../scripts/start/git-server.js';
import { startLearningPlatform, type LearningPlatform } from '../../test/support/learning-platform.js';
import { assertNoSecrets, CapturedLog, makeSandbox, type Sandbox } from './helpers.js';

const run = promisify(execFile);
const PASSWORD = 'save-pw-61c0d2';
const PLATFORM_TOKEN = 'save-lms-token-3b7e';
const PARTICIPATION_TOKEN = 'save-vcs-token-90fa';

describe('agent: saving the work before a stop', function () {
  this.timeout(30_000);
  let git: GitServer;
  let platform: LearningPlatform;
  let sandbox: Sandbox;
  const secrets = [PASSWORD, PLATFORM_TOKEN, PARTICIPATION_TOKEN];

  before(async () => {
    git = await startGitServer({ users: { student: PASSWORD, stud05: PARTICIPATION_TOKEN } });
    await git.createRepository('course/save.git', { files: { 'main.py': 'print("v1")\n' } });
    await git.createRepository('course/save-participation.git', { files: { 'Task.java': 'class Task {}\n' } });
    platform = await startLearningPlatform();
    platform.validTokens.add(PLATFORM_TOKEN);
    platform.participations.add('51');
    platform.participationTokens.set('51', PARTICIPATION_TOKEN);
    sandbox = await makeSandbox();
  });
  after(async () => {
    await Promise.all([git.close(), platform.close()]);
    await sandbox.remove();
  });

  const gitIn = async (dir: string, ...args: string[]) =>
    (await run('git', ['-C', dir, ...args], { env: sandbox.env })).stdout.trim();
  const onServer = (repository: string, ...args: string[]) => gitIn(path.join(git.root, repository), ...args);

  it('pushes the uncommitted and untracked changes to a new branch with GIT_URI credential, leaving the checkout as it was', async () => {
    const dir = path.join(sandbox.dir, 'ws-uri');
    const values = {
      GIT_URI: git.urlWithCredentials('course/save.git', 'student', PASSWORD),
      GIT_USER: 'Save Student',
      GIT_MAIL: 'save@example.org',
    };
    await bootstrapWorkspace({ values, dir, log: new CapturedLog(secrets), env: sandbox.env });
    await writeFile(path.join(dir, 'main.py'), 'print("v2, unsaved")\n');
    await writeFile(path.join(dir, 'notes.txt'), 'new file\n');
    const head = await gitIn(dir, 'rev-parse', 'HEAD');
    const log = new CapturedLog(secrets);

    const now = new Date('2026-11-23T17:30:05.123Z');
    const result = await saveWork({ dir, values, log, env: sandbox.env, now });

    assert.equal(result.outcome, 'saved');
    assert.equal(result.outcome === 'saved' && result.branch, 'ide-cloud/saved-20261123T173005Z');
    assert.equal(savedBranchName(now), 'ide-cloud/saved-20261123T173005Z');
    const branch = 'refs/heads/ide-cloud/saved-20261123T173005Z';
    assert.equal(await onServer('course/save.git', 'show', `${branch}:main.py`), 'print("v2, unsaved")');
    assert.equal(await onServer('course/save.git', 'show', `${branch}:notes.txt`), 'new file');
    assert.equal(await onServer('course/save.git', 'rev-parse', `${branch}^`), head, 'on top of the student HEAD');
    assert.equal(
      await onServer('course/save.git', 'log', '-1', '--format=%an <%ae>', branch),
      'Save Student <save@example.org>',
    );
    // The checkout is untouched: same HEAD, the change still uncommitted, nothing staged.
    assert.equal(await gitIn(dir, 'rev-parse', 'HEAD'), head);
    assert.equal(await gitIn(dir, 'status', '--porcelain'), 'M main.py\n?? notes.txt'); // trimmed: ' M main.py' unstaged
    assertNoSecrets(log.text, secrets);
    assertNoSecrets(await readFile(path.join(dir, '.git', 'config'), 'utf8'), secrets);
  });

  it('saves nothing when nothing is uncommitted or unpushed', async () => {
    const dir = path.join(sandbox.dir, 'ws-clean');
    const values = { GIT_URI: git.urlWithCredentials('course/save.git', 'student', PASSWORD) };
    await bootstrapWorkspace({ values, dir, log: new CapturedLog(secrets), env: sandbox.env });
    const before = await onServer('course/save.git', 'for-each-ref', '--format=%(refname)');
    const result = await saveWork({ dir, values, log: new CapturedLog(secrets), env: sandbox.env });
    assert.equal(result.outcome, 'nothing-to-save');
    assert.equal(await onServer('course/save.git', 'for-each-ref', '--format=%(refname)'), before);
  });

  it('a participation clone pushes with a fresh token from the learning platform', async () => {
    const dir = path.join(sandbox.dir, 'ws-participation');
    const repository = `${git.url}/course/save-participation.git`;
    const cloneLog = new CapturedLog(secrets);
    await cloneParticipation({
      platformUrl: platform.url,
      platformToken: PLATFORM_TOKEN,
      participationId: '51',
      repository,
      participant: 'stud05',
      dir,
      log: cloneLog,
      env: sandbox.env,
      credentialCacheSeconds: 0,
    });
    await writeFile(path.join(dir, 'Task.java'), 'class Task { int answer = 42; }\n');
    const asked = platform.requests.length;
    const log = new CapturedLog(secrets);
    const result = await saveWork({
      dir,
      values: { PLATFORM_URL: platform.url, PLATFORM_TOKEN },
      log,
      env: sandbox.env,
    });
    assert.equal(result.outcome, 'saved');
    assert.ok(platform.requests.length > asked, 'the token came from the platform');
    const branch = result.outcome === 'saved' ? result.branch : '';
    assert.equal(
      await onServer('course/save-participation.git', 'show', `refs/heads/${branch}:Task.java`),
      'class Task { int answer = 42; }',
    );
    const pushes = git.requests.filter((r) => r.path.endsWith('/git-receive-pack'));
    assert.equal(pushes.at(-1)?.user, 'stud05');
    assertNoSecrets(log.text + cloneLog.text, secrets);
  });

  describe('pushes that no longer go to the repository a credential belongs to', () => {
    let elsewhere: GitServer;
    before(async () => {
      // Another host that would accept the participation's token: a leak would show as its user.
      elsewhere = await startGitServer({ users: { stud05: PARTICIPATION_TOKEN, student: PASSWORD } });
      await elsewhere.createRepository('course/save-participation.git', { files: { 'Task.java': 'class Task {}\n' } });
      await elsewhere.createRepository('course/save.git', { files: { 'main.py': 'print("v1")\n' } });
    });
    after(() => elsewhere.close());

    async function participationClone(name: string): Promise<string> {
      const dir = path.join(sandbox.dir, name);
      await cloneParticipation({
        platformUrl: platform.url,
        platformToken: PLATFORM_TOKEN,
        participationId: '51',
        repository: `${git.url}/course/save-participation.git`,
        participant: 'stud05',
        dir,
        log: new CapturedLog(secrets),
        env: sandbox.env,
        credentialCacheSeconds: 0,
      });
      await writeFile(path.join(dir, 'Task.java'), 'class Task { int answer = 43; }\n');
      return dir;
    }

    async function assertRefused(dir: string): Promise<void> {
      const asked = platform.requests.length;
      const log = new CapturedLog(secrets);
      const error = await saveWork({
        dir,
        values: { PLATFORM_URL: platform.url, PLATFORM_TOKEN },
        log,
        env: sandbox.env,
      }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof AgentError, String(error));
      assert.equal(error.code, 'RepositoryChanged');
      assert.equal(
        error.message,
        `origin pushes to ${elsewhere.url}/course/save-participation.git, not to the repository of participation 51 (${git.url}/course/save-participation.git), so the participation's token is not sent there`,
      );
      assertNoSecrets(`${error.message} ${error.hint} ${log.text}`, secrets);
      assert.equal(platform.requests.length, asked, 'no token was even asked for');
      assert.deepEqual(
        elsewhere.requests.filter((r) => r.user !== undefined || r.path.endsWith('/git-receive-pack')),
        [],
        'nothing pushed there and no credential it accepts sent there',
      );
      assert.equal(
        await gitIn(
          path.join(elsewhere.root, 'course/save-participation.git'),
          'for-each-ref',
          '--format=%(refname)',
          'refs/heads/ide-cloud',
        ),
        '',
      );
    }

    it('origin set to another host: nothing pushed, no token sent, a clear error', async () => {
      const dir = await participationClone('ws-origin-elsewhere');
      await gitIn(dir, 'remote', 'set-url', 'origin', `${elsewhere.url}/course/save-participation.git`);
      await assertRefused(dir);
    });

    it('a pushInsteadOf rule sending origin’s pushes to another host: the same', async () => {
      const dir = await participationClone('ws-push-rewritten');
      await gitIn(dir, 'config', `url.${elsewhere.url}/.pushInsteadOf`, `${git.url}/`);
      await assertRefused(dir);
    });

    it('a pushInsteadOf rule sending GIT_URI’s repository to another host: GIT_URI’s credential is not sent', async () => {
      const dir = path.join(sandbox.dir, 'ws-uri-rewritten');
      const values = { GIT_URI: git.urlWithCredentials('course/save.git', 'student', PASSWORD) };
      await bootstrapWorkspace({ values, dir, log: new CapturedLog(secrets), env: sandbox.env });
      await writeFile(path.join(dir, 'main.py'), 'print("v4")\n');
      await gitIn(dir, 'config', `url.${elsewhere.url}/.pushInsteadOf`, `${git.url}/`);
      const log = new CapturedLog(secrets);
      await saveWork({ dir, values, log, env: sandbox.env }).catch(() => undefined);
      assertNoSecrets(log.text, secrets);
      assert.deepEqual(
        elsewhere.requests.filter((r) => r.user !== undefined),
        [],
        'no credential it accepts sent there',
      );
      assert.equal(
        await gitIn(
          path.join(elsewhere.root, 'course/save.git'),
          'for-each-ref',
          '--format=%(refname)',
          'refs/heads/ide-cloud',
        ),
        '',
      );
    });
  });

  it('a refused push fails with what to do, no token in the message', async () => {
    const dir = path.join(sandbox.dir, 'ws-refused');
    const values = { GIT_URI: git.urlWithCredentials('course/save.git', 'student', PASSWORD) };
    await bootstrapWorkspace({ values, dir, log: new CapturedLog(secrets), env: sandbox.env });
    await writeFile(path.join(dir, 'main.py'), 'print("v3")\n');
    git.removeUser('student');
    try {
      const error = await saveWork({ dir, values, log: new CapturedLog(secrets), env: sandbox.env }).then(
        () => undefined,
        (e: unknown) => e,
      );
      assert.ok(error instanceof AgentError, String(error));
      assert.equal(error.code, 'CredentialRefused');
      assertNoSecrets(error.message, secrets);
    } finally {
      git.addUser('student', PASSWORD);
    }
  });
});
