// The IDE's side of the stop warning against a real bridge server on loopback: each notice is shown
// once with the minutes left, choosing "Keep working" on an idle notice reports activity, and the
// student's activity reaches the bridge throttled to one report per interval.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { SessionLifecycle } from '../src/lifecycle.js';
import { MemoryLogger } from '../src/logger.js';
import { BridgeServer } from '../src/server.js';
import { KEEP_ACTION, StopNoticeWatcher, noticeMessage } from '../src/stop-notice.js';
import { EnvironmentStore } from '../src/store.js';
import { MemorySecretStorage } from './fakes.js';

const TOKEN = 'instance-token-notice-5b1c';

describe('extension: the stop notice and activity reports', () => {
  let server: BridgeServer;
  let lifecycle: SessionLifecycle;
  let source: string;
  let now = 1_000_000;
  const clock = () => now;

  beforeEach(async () => {
    const logger = new MemoryLogger();
    lifecycle = new SessionLifecycle(clock);
    server = new BridgeServer(new EnvironmentStore(new MemorySecretStorage(), logger), logger, {
      host: '127.0.0.1',
      port: 0,
      token: TOKEN,
      lifecycle,
    });
    source = `http://127.0.0.1:${((await server.listen()) as AddressInfo).port}`;
  });
  afterEach(() => server.dispose());

  function watcher(shown: { message: string; actions: string[] }[], choose?: string): StopNoticeWatcher {
    return new StopNoticeWatcher({
      source,
      token: TOKEN,
      logger: new MemoryLogger(),
      clock,
      show: (message, ...actions) => {
        shown.push({ message, actions });
        return Promise.resolve(choose);
      },
    });
  }

  it('says why, the minutes left and what happens to the work', () => {
    assert.equal(
      noticeMessage({ reason: 'Idle', secondsLeft: 300, saveWork: false }),
      'This session has been idle and stops in about 5 minutes. Any activity in the IDE keeps it running. Commit and push your work before then.',
    );
    assert.equal(
      noticeMessage({ reason: 'MaxLifetime', secondsLeft: 61, saveWork: true }),
      'This session reaches its maximum lifetime and stops in about 2 minutes. Uncommitted changes will be pushed to a new branch of your repository.',
    );
    assert.match(noticeMessage({ reason: 'Idle', secondsLeft: 60, saveWork: false }), /in about 1 minute\./);
    assert.match(noticeMessage({ reason: 'Idle', secondsLeft: 20, saveWork: false }), /in less than a minute\./);
  });

  it('shows each notice the bridge holds once, with the time left on the bridge’s clock', async () => {
    const shown: { message: string; actions: string[] }[] = [];
    const w = watcher(shown);
    await w.poll();
    assert.equal(shown.length, 0, 'no notice, nothing shown');
    lifecycle.notify({ reason: 'MaxLifetime', secondsLeft: 600, saveWork: false });
    now += 130_000;
    await w.poll();
    await w.poll();
    assert.deepEqual(shown, [
      {
        message: noticeMessage({ reason: 'MaxLifetime', secondsLeft: 470, saveWork: false }),
        actions: [],
      },
    ]);
    assert.match(shown[0]!.message, /in about 8 minutes/);
    lifecycle.notify({ reason: 'Idle', secondsLeft: 120, saveWork: false });
    await w.poll();
    assert.equal(shown.length, 2, 'a new notice is shown');
    assert.deepEqual(shown[1]!.actions, [KEEP_ACTION]);
  });

  it('"Keep working" on an idle notice reports activity at once', async () => {
    const w = watcher([], KEEP_ACTION);
    lifecycle.notify({ reason: 'Idle', secondsLeft: 120, saveWork: false });
    await w.poll();
    await new Promise<void>((resolve) => setImmediate(resolve));
    const deadline = Date.now() + 5000;
    while (lifecycle.secondsSinceActivity() === null && Date.now() < deadline) {
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    assert.equal(lifecycle.secondsSinceActivity(), 0);
  });

  it('reports activity at most once per interval', async () => {
    const w = watcher([]);
    await w.reportActivity();
    assert.equal(lifecycle.secondsSinceActivity(), 0);
    now += 5_000;
    await w.reportActivity();
    assert.equal(lifecycle.secondsSinceActivity(), 5, 'within the interval: not reported again');
    now += 6_000;
    await w.reportActivity();
    assert.equal(lifecycle.secondsSinceActivity(), 0);
  });
});
