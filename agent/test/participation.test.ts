// The interactive participation clone against the stand-in learning platform and a real git server:
// the token comes from GET (or PUT when GET fails), goes into the clone URL, and never into the stored
// remote, the logs or an error message.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { AgentError, PlatformClient, cloneParticipation } from '../src/core/index.js';
import { startGitServer, type GitServer } from '../../scripts/start/git-server.js';
import { startLearningPlatform, type LearningPlatform } from '../../test/support/learning-platform.js';
import { assertNoSecrets, CapturedLog, makeSandbox, type Sandbox } from './helpers.js';

const run = promisify(execFile);
const PLATFORM_TOKEN = 'lms-bearer-8c1f0a77';
const EXISTING_TOKEN = 'vcs-existing-4d2b91';

describe('agent participation clone', function () {
  this.timeout(30_000);
  let git: GitServer;
  let platform: LearningPlatform;
  let sandbox: Sandbox;
  let repository: string;
  const secrets = () => [PLATFORM_TOKEN, EXISTING_TOKEN, ...platform.participationTokens.values()];

  before(async () => {
    git = await startGitServer();
    platform = await startLearningPlatform();
    platform.validTokens.add(PLATFORM_TOKEN);
    platform.participations.add('42');
    platform.participations.add('43');
    platform.participationTokens.set('42', EXISTING_TOKEN);
    git.addUser('stud01', EXISTING_TOKEN);
    platform.onTokenCreated = (_id, token) => git.addUser('stud01', token);
    repository = await git.createRepository('exercise-7/exercise-7-stud01.git', {
      files: { 'Task.java': 'class Task {}\n' },
    });
    sandbox = await makeSandbox();
  });
  after(async () => {
    await Promise.all([git.close(), platform.close()]);
    await sandbox.remove();
  });

  const clone = (
    participationId: string,
    dir: string,
    log: CapturedLog,
    overrides: { platformToken?: string; platformUrl?: string } = {},
  ) =>
    cloneParticipation({
      platformUrl: platform.url,
      platformToken: PLATFORM_TOKEN,
      participationId,
      repository,
      participant: 'stud01',
      dir: path.join(sandbox.dir, dir),
      log,
      env: sandbox.env,
      ...overrides,
    });

  it('gets the existing token with GET and clones with it; the stored remote holds no token', async () => {
    const log = new CapturedLog();
    const result = await clone('42', 'p42', log);
    assert.equal(result.outcome, 'cloned');
    const dir = path.join(sandbox.dir, 'p42');
    assert.equal(await readFile(path.join(dir, 'Task.java'), 'utf8'), 'class Task {}\n');
    const { stdout } = await run('git', ['-C', dir, 'remote', 'get-url', 'origin'], { env: sandbox.env });
    assert.equal(stdout.trim(), repository);
    assertNoSecrets(await readFile(path.join(dir, '.git', 'config'), 'utf8'), secrets());
    assert.deepEqual(
      platform.requests.map((r) => `${r.method} ${r.participationId} ${r.status}`),
      ['GET 42 200'],
    );
    assert.ok(git.requests.some((r) => r.user === 'stud01' && r.status === 200));
    assert.match(log.text, /requesting an access token for participation 42 from http:\/\/127\.0\.0\.1:\d+…/);
    assertNoSecrets(log.text, secrets());
  });

  it('refreshes the push credential when the folder already holds the participation repository', async () => {
    const log = new CapturedLog();
    git.requests.length = 0;
    const result = await clone('42', 'p42', log);
    assert.equal(result.outcome, 'already-present');
    assert.match(log.text, /already holds this repository; its push credential was refreshed/);
    assert.ok(!git.requests.some((r) => r.path.endsWith('/git-upload-pack')), 'nothing fetched');
    const dir = path.join(sandbox.dir, 'p42');
    await run('git', ['-C', dir, 'ls-remote', 'origin'], { env: { ...sandbox.env, GIT_TERMINAL_PROMPT: '0' } });
    assert.ok(
      git.requests.some((r) => r.user === 'stud01' && r.status === 200),
      'the cached token authenticated',
    );
    assertNoSecrets(log.text, secrets());
  });

  it('creates a token with PUT when GET fails, and clones with the new token', async () => {
    platform.requests.length = 0;
    const log = new CapturedLog();
    const result = await clone('43', 'p43', log);
    assert.equal(result.outcome, 'cloned');
    assert.deepEqual(
      platform.requests.map((r) => `${r.method} ${r.participationId} ${r.status}`),
      ['GET 43 404', 'PUT 43 200'],
    );
    const created = platform.participationTokens.get('43');
    assert.ok(created);
    assertNoSecrets(log.text, secrets());
    assertNoSecrets(await readFile(path.join(sandbox.dir, 'p43', '.git', 'config'), 'utf8'), secrets());
  });

  it('reports an expired platform token (401) clearly, without trying PUT or printing the token', async () => {
    platform.requests.length = 0;
    const log = new CapturedLog();
    await assert.rejects(clone('42', 'p-expired', log, { platformToken: 'lms-expired-0000' }), (error: unknown) => {
      assert.ok(error instanceof AgentError);
      assert.equal(error.code, 'PlatformTokenExpired');
      assert.match(error.message, /rejected PLATFORM_TOKEN \(HTTP 401\): it is expired or not valid/);
      assert.match(error.hint, /Open the IDE again from the learning platform/);
      assertNoSecrets(`${error.message} ${error.hint}`, ['lms-expired-0000']);
      return true;
    });
    assert.deepEqual(
      platform.requests.map((r) => r.method),
      ['GET'],
    );
    assertNoSecrets(log.text, ['lms-expired-0000']);
  });

  it('reports an unreachable platform', async () => {
    await assert.rejects(
      clone('42', 'p-unreach', new CapturedLog(), { platformUrl: 'http://127.0.0.1:1' }),
      (error: unknown) =>
        error instanceof AgentError &&
        error.code === 'PlatformUnreachable' &&
        /127\.0\.0\.1:1 is unreachable/.test(error.message),
    );
  });

  it('reports a repository that refuses the participation token, without printing it', async () => {
    const log = new CapturedLog();
    git.removeUser('stud01');
    try {
      await assert.rejects(clone('42', 'p-refused', log), (error: unknown) => {
        assert.ok(error instanceof AgentError);
        assert.equal(error.code, 'CredentialRefused');
        assert.match(error.message, /refused the credential/);
        assertNoSecrets(`${error.message} ${error.hint}`, secrets());
        return true;
      });
    } finally {
      git.addUser('stud01', EXISTING_TOKEN);
    }
    assertNoSecrets(log.text, secrets());
  });

  it('takes 403 for an expired token as well, on GET or on PUT', async () => {
    for (const statuses of [[403], [404, 403]]) {
      const seen: string[] = [];
      const client = new PlatformClient({
        platformUrl: 'https://lms.example',
        platformToken: 'lms-forbidden-1234',
        fetch: async (_url, init) => {
          seen.push(String(init?.method));
          return new Response('no', { status: statuses[seen.length - 1] ?? 500 });
        },
      });
      await assert.rejects(
        client.participationToken('1'),
        (error: unknown) =>
          error instanceof AgentError && error.code === 'PlatformTokenExpired' && /HTTP 403/.test(error.message),
      );
      assert.deepEqual(seen, statuses.length === 1 ? ['GET'] : ['GET', 'PUT']);
    }
  });

  it('says when the platform has no token for the participation at all', async () => {
    const client = new PlatformClient({ platformUrl: `${platform.url}/`, platformToken: PLATFORM_TOKEN });
    await assert.rejects(client.participationToken('999'), (error: unknown) => {
      assert.ok(error instanceof AgentError);
      assert.equal(error.code, 'PlatformError');
      assert.match(error.message, /GET HTTP 404, PUT HTTP 404/);
      return true;
    });
    assert.equal(await client.participationToken('42'), EXISTING_TOKEN);
  });
});
