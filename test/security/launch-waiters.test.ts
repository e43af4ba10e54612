// Issue 27, item 7: concurrent `POST /service` calls waiting for the same session were all held for
// the whole timeout (21 for one stuck workspace; up to 60 minutes each, with 1000 connections). Replayed
// against the real service and kube-apiserver with no operator, so every session stays starting: the
// waiters are capped per workspace and per user, and those over a cap are refused at once.
import assert from 'node:assert/strict';
import { ErrorCode } from '../../server/src/model/error-codes.js';
import { LAUNCH_WAITERS } from '../../server/src/model/limits.js';
import { BASE_APP, SERVICE_AUTH_TOKEN, call, type Answer } from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

const appId = SERVICE_AUTH_TOKEN;
const TIMEOUT_MINUTES = 0.1; // 6 s: every admitted launch waits this long and answers 551

describe('security: launches waiting at once (27.7)', function () {
  this.timeout(120_000);

  /** Sends all launches at once; answers each with how long it took. */
  const launchAll = (bodies: Record<string, unknown>[]) =>
    Promise.all(
      bodies.map(async (body) => {
        const started = Date.now();
        const answer = await call(stack.service.url, 'POST', '/service', {
          body: { appId, timeout: TIMEOUT_MINUTES, ...body },
        });
        return { ...answer, ms: Date.now() - started };
      }),
    );
  const refused = (answers: (Answer & { ms: number })[]) =>
    answers.filter((a) => a.status === ErrorCode.tooManyWaiters);

  // Room for many sessions per user: the waiters' cap, not the session limit, is what refuses here.
  const stack = useStack('sec-waiters', { apps: [BASE_APP], service: { sessionsPerUser: 50 } });

  it('refuses at once the launches for one workspace beyond the cap, while the admitted ones wait', async () => {
    const body = { user: 'stuck@example.com', appDefinition: 'python-latest', workspaceName: 'ws-stuck' };
    const answers = await launchAll(Array.from({ length: 21 }, () => body));
    const over = refused(answers);
    assert.equal(over.length, 21 - LAUNCH_WAITERS.perWorkspace, answers.map((a) => a.status).join(' '));
    for (const answer of over) {
      assert.deepEqual(answer.json, {
        code: 429,
        reason: `too many launches already wait for this workspace (at most ${LAUNCH_WAITERS.perWorkspace}); retry later`,
      });
      assert.equal(answer.headers.get('retry-after'), '10');
      assert.ok(answer.ms < 3000, `refused at once, not after the timeout: ${answer.ms} ms`);
    }
    assert.deepEqual(
      answers.filter((a) => a.status !== 429).map((a) => a.status),
      Array<number>(LAUNCH_WAITERS.perWorkspace).fill(551),
    );
  });

  it('refuses at once the launches of one user beyond the cap, whatever the workspaces', async () => {
    const count = LAUNCH_WAITERS.perUser + 3;
    const [other, ...answers] = await launchAll([
      { user: 'other@example.com', appDefinition: 'python-latest', ephemeral: true },
      ...Array.from({ length: count }, (_, i) => ({
        user: 'many@example.com',
        appDefinition: 'python-latest',
        workspaceName: `ws-many-${i}`,
      })),
    ]);
    assert.equal(other!.status, 551, 'another user meanwhile waits for their own launch');
    const over = refused(answers);
    assert.equal(over.length, 3, answers.map((a) => a.status).join(' '));
    for (const answer of over) {
      assert.deepEqual(answer.json, {
        code: 429,
        reason: `too many launches of this user already wait (at most ${LAUNCH_WAITERS.perUser}); retry later`,
      });
      assert.ok(answer.ms < 3000, `${answer.ms} ms`);
    }
  });
});
