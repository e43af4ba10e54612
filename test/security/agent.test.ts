// Attacks on the session bootstrap agent (issue 15), replayed with real git against a real git
// smart-HTTP server and the stand-in learning platform: a clone token read off the process list (12),
// and a platform address over plain http that would receive the student's platform token (14).
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AgentError, cloneIntoWorkspace, cloneParticipation } from '../../agent/src/core/index.js';
import { assertNoSecrets, CapturedLog, makeSandbox, type Sandbox } from '../../agent/test/helpers.js';
import { startGitServer, type GitServer } from '../../scripts/start/git-server.js';
import { startLearningPlatform, type LearningPlatform } from '../support/learning-platform.js';

const TOKEN = 'clone-tok3n-Qm81Zr';

/** Every process's command line, as `ps` shows them to anyone on the machine. */
async function commandLines(): Promise<string[]> {
  const lines: string[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    if (cmdline) lines.push(cmdline.split('\0').join(' '));
  }
  return lines;
}

describe('security: the session bootstrap agent', function () {
  this.timeout(60_000);
  let sandbox: Sandbox;

  before(async () => {
    sandbox = await makeSandbox();
  });
  after(async () => {
    await sandbox.remove();
  });

  describe('the clone token in the process list (12)', () => {
    let server: GitServer;
    before(async () => {
      // Slow answers keep git and its helpers running long enough to be looked at.
      server = await startGitServer({ users: { student: TOKEN }, delayMs: 150 });
      await server.createRepository('course/secret.git', { files: { 'README.md': 'hi\n' } });
    });
    after(async () => {
      await server.close();
    });

    it('no process carries the token in its arguments while the clone runs', async () => {
      const dir = path.join(sandbox.dir, 'ws-argv');
      const url = server.urlWithCredentials('course/secret.git', 'student', TOKEN);
      let done = false;
      const clone = cloneIntoWorkspace(url, dir, { env: sandbox.env }).finally(() => (done = true));
      const gitProcesses = new Set<string>();
      const leaks: string[] = [];
      while (!done) {
        for (const line of await commandLines()) {
          if (/\bgit\b|git-remote/.test(line) && line.includes('course/secret.git')) gitProcesses.add(line);
          if (line.includes(TOKEN)) leaks.push(line);
        }
      }
      assert.equal((await clone).outcome, 'cloned');
      assert.ok(gitProcesses.size > 0, 'the clone was seen running');
      assert.deepEqual(leaks, []);
      assert.equal(
        (await readFile(path.join(dir, '.git', 'config'), 'utf8')).includes(TOKEN),
        false,
        'nor is it in the clone config',
      );
    });
  });

  describe('a platform address over plain http (14)', () => {
    let platform: LearningPlatform;
    const host = Object.values(os.networkInterfaces())
      .flat()
      .find((i) => i && !i.internal && i.family === 'IPv4')?.address;

    before(async function () {
      assert.ok(host, 'this test needs a network interface besides loopback');
      platform = await startLearningPlatform(host);
      platform.validTokens.add('platform-token-7f2a');
      platform.participations.add('42');
      platform.participationTokens.set('42', 'vcs-token');
    });
    after(async () => {
      await platform?.close();
    });

    it('refuses to send PLATFORM_TOKEN there, naming the fix, and sends nothing', async () => {
      assert.match(platform.url, /^http:\/\/(?!127\.)/);
      const log = new CapturedLog(['platform-token-7f2a']);
      await assert.rejects(
        cloneParticipation({
          platformUrl: platform.url,
          platformToken: 'platform-token-7f2a',
          participationId: '42',
          repository: 'https://git.example.org/course/ex.git',
          participant: 'student',
          dir: path.join(sandbox.dir, 'ws-platform'),
          log,
          env: sandbox.env,
        }),
        (error: unknown) => {
          assert.ok(error instanceof AgentError);
          assert.equal(error.code, 'PlatformUrlInsecure');
          assert.match(error.message, /must use https/);
          return true;
        },
      );
      assert.deepEqual(platform.requests, [], 'the platform received nothing');
      assertNoSecrets(log.lines.join('\n'), ['platform-token-7f2a']);
    });
  });
});
