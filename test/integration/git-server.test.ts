// The smart-HTTP git fixture itself, driven by the real git client: anonymous and authenticated reads,
// refusals, and a push big enough that git compresses the request body with gzip.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { startGitServer, type GitServer } from '../../scripts/start/git-server.js';

const run = promisify(execFile);
const env = {
  ...process.env,
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_TERMINAL_PROMPT: '0',
  GIT_AUTHOR_NAME: 'T',
  GIT_AUTHOR_EMAIL: 't@example.invalid',
  GIT_COMMITTER_NAME: 'T',
  GIT_COMMITTER_EMAIL: 't@example.invalid',
};

describe('git smart-HTTP test server', function () {
  this.timeout(60_000);
  let server: GitServer;
  let work: string;

  before(async () => {
    server = await startGitServer({ users: { alice: 'pa ss:wörd' } });
    work = await mkdtemp(path.join(os.tmpdir(), 'git-server-test-'));
  });
  after(async () => {
    await server.close();
    await rm(work, { recursive: true, force: true });
  });

  it('serves a public repository to anonymous clients', async () => {
    const url = await server.createRepository('open/hello.git', { access: 'public', files: { 'a.txt': 'A\n' } });
    await run('git', ['clone', '--quiet', url, path.join(work, 'public')], { env });
    assert.equal(await readFile(path.join(work, 'public', 'a.txt'), 'utf8'), 'A\n');
  });

  it('refuses a private repository without credentials and serves it with them', async () => {
    await server.createRepository('course/private.git', { files: { 'b.txt': 'B\n' } });
    await assert.rejects(
      run('git', ['clone', '--quiet', `${server.url}/course/private.git`, path.join(work, 'anon')], { env }),
      /terminal prompts disabled|could not read Username/,
    );
    await assert.rejects(
      run(
        'git',
        ['clone', '--quiet', server.urlWithCredentials('course/private.git', 'alice', 'wrong'), path.join(work, 'bad')],
        {
          env,
        },
      ),
      /Authentication failed/,
    );
    const good = server.urlWithCredentials('course/private.git', 'alice', 'pa ss:wörd');
    await run('git', ['clone', '--quiet', good, path.join(work, 'private')], { env });
    assert.equal(await readFile(path.join(work, 'private', 'b.txt'), 'utf8'), 'B\n');
    assert.ok(server.requests.some((r) => r.user === 'alice' && r.status === 200));
    assert.ok(server.requests.some((r) => r.user === undefined && r.status === 401));
  });

  it('takes a push bigger than the post buffer (chunked) and a gzip-compressed fetch negotiation', async () => {
    await server.createRepository('course/big.git');
    const url = server.urlWithCredentials('course/big.git', 'alice', 'pa ss:wörd');
    const repo = path.join(work, 'big');
    await run('git', ['init', '--quiet', '--initial-branch=main', repo], { env });
    // Random data makes the pack bigger than git's 1 MiB post buffer, so the push body goes chunked.
    await writeFile(path.join(repo, 'blob.bin'), randomBytes(3 * 1024 * 1024));
    await run('git', ['-C', repo, 'add', '.'], { env });
    await run('git', ['-C', repo, 'commit', '--quiet', '-m', 'big'], { env });
    // 200 branches on distinct commits: a clone then wants 200 objects, a negotiation body over the
    // 1 KiB above which git gzips upload-pack requests.
    const stream = Array.from(
      { length: 200 },
      (_, i) =>
        `commit refs/heads/b${i}\ncommitter T <t@example.invalid> ${1_700_000_000 + i} +0000\n` +
        `data ${`c${i}`.length}\nc${i}\nfrom refs/heads/main^0\n\n`,
    ).join('');
    await new Promise<void>((resolve, reject) => {
      const child = execFile('git', ['-C', repo, 'fast-import', '--quiet'], { env }, (error) =>
        error ? reject(error) : resolve(),
      );
      child.stdin?.end(stream);
    });
    await run('git', ['-C', repo, 'push', '--quiet', url, '--all'], { env, maxBuffer: 1 << 24 });
    const copy = path.join(work, 'big-copy');
    await run('git', ['clone', '--quiet', '--mirror', url, copy], { env });
    const { stdout } = await run('git', ['-C', copy, 'branch', '--list'], { env });
    assert.equal(stdout.trim().split('\n').length, 201);
    const { stdout: size } = await run('git', ['-C', copy, 'cat-file', '-s', 'main:blob.bin'], { env });
    assert.equal(Number(size), 3 * 1024 * 1024);
    assert.ok(
      server.requests.some((r) => r.path.endsWith('/git-receive-pack') && r.chunked && r.status === 200),
      'the big push went chunked',
    );
    assert.ok(
      server.requests.some(
        (r) => r.path.endsWith('/git-upload-pack') && r.contentEncoding === 'gzip' && r.status === 200,
      ),
      'a fetch negotiation went gzip-compressed',
    );
  });
});
