// Auto-clone against a real git smart-HTTP server: credentials only from the URL, the stored remote
// without them, clear errors, idempotent re-runs and the TEMPLATE starter. Secrets never in the logs.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { AgentError, bootstrapWorkspace, cloneIntoWorkspace } from '../src/core/index.js';
import { startGitServer, type GitServer } from '../../scripts/start/git-server.js';
import { assertNoSecrets, CapturedLog, makeSandbox, type Sandbox } from './helpers.js';

const run = promisify(execFile);
const PASSWORD = 'gitpw-Zq7/x+9@k';
const PLATFORM_TOKEN = 'platform-tok-5f1e2d';

describe('agent auto-clone with real git', function () {
  this.timeout(30_000);
  let server: GitServer;
  let git: GitServer;
  let sandbox: Sandbox;
  let privateUrl: string;
  let credentialed: string;

  before(async () => {
    server = await startGitServer({ users: { student: PASSWORD } });
    git = server;
    privateUrl = await server.createRepository('course/exercise.git', {
      files: { 'README.md': '# Exercise\n', 'src/main.py': 'print("hi")\n' },
    });
    credentialed = server.urlWithCredentials('course/exercise.git', 'student', PASSWORD);
    sandbox = await makeSandbox();
  });
  after(async () => {
    await server.close();
    await sandbox.remove();
  });

  const gitIn = async (dir: string, ...args: string[]) =>
    (await run('git', ['-C', dir, ...args], { env: sandbox.env })).stdout.trim();

  it('clones a private repository with the credentials in the URL and stores the remote without them', async () => {
    const dir = path.join(sandbox.dir, 'ws-private');
    const log = new CapturedLog([PASSWORD]);
    const result = await bootstrapWorkspace({
      values: { GIT_URI: credentialed, GIT_USER: 'Student One', GIT_MAIL: 'one@example.org', PLATFORM_TOKEN },
      dir,
      log,
      env: sandbox.env,
    });
    assert.equal(result.clone?.outcome, 'cloned');
    assert.deepEqual(result.identity, ['user.name', 'user.email']);
    assert.equal(await readFile(path.join(dir, 'README.md'), 'utf8'), '# Exercise\n');
    assert.equal(await gitIn(dir, 'remote', 'get-url', 'origin'), privateUrl);
    const config = await readFile(path.join(dir, '.git', 'config'), 'utf8');
    assertNoSecrets(config, [PASSWORD]);
    assert.equal(await gitIn(dir, 'config', 'user.name'), 'Student One');
    assert.equal(await gitIn(dir, 'config', 'user.email'), 'one@example.org');
    assert.match(
      log.text,
      /cloning http:\/\/127\.0\.0\.1:\d+\/course\/exercise\.git into .*…\ndone: repository cloned/,
    );
    assertNoSecrets(log.text, [PASSWORD, PLATFORM_TOKEN, credentialed]);
    assert.ok(server.requests.some((r) => r.user === 'student' && r.status === 200));
  });

  it("keeps the credential only in git's memory cache, so a later push works without a token on disk", async () => {
    const dir = path.join(sandbox.dir, 'ws-private');
    assert.equal(await gitIn(dir, 'config', '--local', 'credential.helper'), 'cache --timeout=28800');
    await writeFile(path.join(dir, 'answer.py'), 'print(42)\n');
    await gitIn(dir, 'add', 'answer.py');
    await gitIn(dir, 'commit', '--quiet', '-m', 'answer');
    await gitIn(dir, 'push', '--quiet', 'origin', 'main');
    assert.ok(
      git.requests.some((r) => r.path.endsWith('/git-receive-pack') && r.user === 'student' && r.status === 200),
    );
    const stored = await readdir(sandbox.dir);
    for (const name of stored.filter((n) => n.startsWith('.git-credentials'))) assert.fail(`credentials file ${name}`);
    assertNoSecrets(await readFile(path.join(dir, '.git', 'config'), 'utf8'), [PASSWORD]);
  });

  it('keeps no credential at all with credentialCacheSeconds 0', async () => {
    const dir = path.join(sandbox.dir, 'ws-nocache');
    await cloneIntoWorkspace(credentialed, dir, {
      env: { ...sandbox.env, XDG_CACHE_HOME: path.join(sandbox.dir, 'other-cache') },
      credentialCacheSeconds: 0,
    });
    await assert.rejects(gitIn(dir, 'config', '--local', 'credential.helper'));
  });

  it('leaves a workspace that already holds the repository alone, with the user files in it', async () => {
    const dir = path.join(sandbox.dir, 'ws-private');
    await writeFile(path.join(dir, 'README.md'), 'my own edits\n');
    await writeFile(path.join(dir, 'notes.txt'), 'untracked work\n');
    const before = server.requests.length;
    const log = new CapturedLog();
    const result = await bootstrapWorkspace({ values: { GIT_URI: credentialed }, dir, log, env: sandbox.env });
    assert.equal(result.clone?.outcome, 'already-present');
    assert.equal(await readFile(path.join(dir, 'README.md'), 'utf8'), 'my own edits\n');
    assert.equal(await readFile(path.join(dir, 'notes.txt'), 'utf8'), 'untracked work\n');
    assert.equal(server.requests.length, before, 'no request to the git server');
    assert.match(log.text, /already holds this repository; left as it is/);
  });

  it('leaves a workspace holding another repository alone too', async () => {
    const other = await server.createRepository('course/other.git', { access: 'public', files: { 'o.txt': 'o' } });
    const dir = path.join(sandbox.dir, 'ws-private');
    const result = await cloneIntoWorkspace(other, dir, { env: sandbox.env });
    assert.equal(result.outcome, 'other-repository');
    assert.equal(result.remote, privateUrl);
    await assert.rejects(readFile(path.join(dir, 'o.txt')), { code: 'ENOENT' });
  });

  it('fails with a clear error when the URL carries no credential for a private repository', async () => {
    const dir = path.join(sandbox.dir, 'ws-anon');
    await assert.rejects(cloneIntoWorkspace(privateUrl, dir, { env: sandbox.env }), (error: unknown) => {
      assert.ok(error instanceof AgentError);
      assert.equal(error.code, 'CredentialRequired');
      assert.match(error.message, /needs a credential and the clone URL carries none/);
      assert.match(error.hint, /https:\/\/<user>:<token>@host\/path\.git/);
      return true;
    });
    assert.deepEqual(await readdir(dir), [], 'nothing left behind');
  });

  it('says the repository refused the credential, without printing it', async () => {
    const wrong = server.urlWithCredentials('course/exercise.git', 'student', 'wrong-pass-123');
    await assert.rejects(
      cloneIntoWorkspace(wrong, path.join(sandbox.dir, 'ws-wrong'), { env: sandbox.env }),
      (error: unknown) => {
        assert.ok(error instanceof AgentError);
        assert.equal(error.code, 'CredentialRefused');
        assertNoSecrets(`${error.message} ${error.hint} ${error.stack}`, ['wrong-pass-123', PASSWORD]);
        return true;
      },
    );
  });

  it('names a missing repository and an unreachable git server', async () => {
    await assert.rejects(
      cloneIntoWorkspace(
        server.urlWithCredentials('course/nope.git', 'student', PASSWORD),
        path.join(sandbox.dir, 'ws-404'),
        {
          env: sandbox.env,
        },
      ),
      (error: unknown) =>
        error instanceof AgentError && error.code === 'RepositoryNotFound' && !error.message.includes(PASSWORD),
    );
    await assert.rejects(
      cloneIntoWorkspace('http://student:pw-unreach@127.0.0.1:1/x.git', path.join(sandbox.dir, 'ws-unreach'), {
        env: sandbox.env,
      }),
      (error: unknown) =>
        error instanceof AgentError && error.code === 'GitRemoteUnreachable' && !error.message.includes('pw-unreach'),
    );
  });

  it('clones into a workspace that holds other files, and refuses to overwrite a file the repository has', async () => {
    const dir = path.join(sandbox.dir, 'ws-nonempty');
    await mkdir(path.join(dir, '.vscode'), { recursive: true });
    await writeFile(path.join(dir, '.vscode', 'settings.json'), '{}');
    const result = await cloneIntoWorkspace(credentialed, dir, { env: sandbox.env });
    assert.equal(result.outcome, 'cloned');
    assert.deepEqual((await readdir(dir)).sort(), ['.git', '.vscode', 'README.md', 'answer.py', 'src']);
    assert.equal(await gitIn(dir, 'remote', 'get-url', 'origin'), privateUrl);

    const clash = path.join(sandbox.dir, 'ws-clash');
    await mkdir(clash, { recursive: true });
    await writeFile(path.join(clash, 'README.md'), 'precious\n');
    await assert.rejects(
      cloneIntoWorkspace(credentialed, clash, { env: sandbox.env }),
      (error: unknown) =>
        error instanceof AgentError && error.code === 'WorkspaceConflict' && /README\.md/.test(error.message),
    );
    assert.deepEqual(await readdir(clash), ['README.md']);
    assert.equal(await readFile(path.join(clash, 'README.md'), 'utf8'), 'precious\n');
  });

  it('writes the TEMPLATE starter into an empty repository, and never into one with content', async () => {
    const emptyUrl = await server.createRepository('course/empty.git', { access: 'public' });
    const dir = path.join(sandbox.dir, 'ws-template');
    const log = new CapturedLog();
    const result = await bootstrapWorkspace({
      values: { GIT_URI: emptyUrl, TEMPLATE: 'maven' },
      dir,
      log,
      env: sandbox.env,
    });
    assert.deepEqual(result.template.sort(), ['.gitignore', 'pom.xml', 'src/main/java/exercise/Main.java']);
    assert.match(await readFile(path.join(dir, 'pom.xml'), 'utf8'), /<artifactId>exercise<\/artifactId>/);

    const full = path.join(sandbox.dir, 'ws-private');
    const again = await bootstrapWorkspace({
      values: { GIT_URI: credentialed, TEMPLATE: 'make' },
      dir: full,
      log,
      env: sandbox.env,
    });
    assert.deepEqual(again.template, []);
    await assert.rejects(readFile(path.join(full, 'Makefile')), { code: 'ENOENT' });

    await assert.rejects(
      bootstrapWorkspace({
        values: { TEMPLATE: 'cobol' },
        dir: path.join(sandbox.dir, 'ws-cobol'),
        log,
        env: sandbox.env,
      }),
      (error: unknown) =>
        error instanceof AgentError &&
        error.code === 'UnknownTemplate' &&
        /maven, gradle, make, bazel/.test(error.hint),
    );
  });
});
