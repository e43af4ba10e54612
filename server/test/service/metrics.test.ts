import assert from 'node:assert/strict';
import type { WatchEventType } from '../../src/kube/informer.js';
import type { Session, SessionStatus } from '../../src/model/session.js';
import type { ServiceCaches } from '../../src/service/cache.js';
import { ServiceMetrics } from '../../src/service/metrics.js';

const session = (uid: string, status?: SessionStatus, appDefinition = 'python'): Session => ({
  metadata: { name: `session-${uid}`, uid },
  spec: { user: 'alice@example.com', appDefinition },
  ...(status ? { status } : {}),
});
const failed = (reason: string): SessionStatus => ({
  phase: 'Failed',
  error: { code: 500, reason: 'the IDE image could not be pulled: x' },
  conditions: [{ type: 'Ready', status: 'False', reason, lastTransitionTime: '2025-01-01T00:00:00Z' }],
});
const starting: SessionStatus = {
  phase: 'Starting',
  conditions: [{ type: 'Ready', status: 'False', reason: 'PodNotReady', lastTransitionTime: '2025-01-01T00:00:00Z' }],
};

/** A session cache stand-in: what it lists, and its events delivered by hand. */
function caches(present: Session[]) {
  let listener: ((type: WatchEventType, s: Session) => void) | undefined;
  const fake = {
    sessions: { list: () => present, informer: { on: (l: typeof listener) => (listener = l) } },
    appDefinitions: { list: () => [] },
  };
  return {
    caches: fake as unknown as Pick<ServiceCaches, 'sessions' | 'appDefinitions'>,
    emit: (type: WatchEventType, s: Session) => listener!(type, s),
  };
}

const line = (text: string, name: string, labels: string) =>
  new RegExp(`^${name}\\{${labels.replace(/[{}]/g, '\\$&')}\\} (\\d+)$`, 'm').exec(text)?.[1];

describe('service: metrics of failed session starts', () => {
  it('the gauge counts the failed sessions present by app definition and Ready reason, not deleted ones', async () => {
    const present = [
      session('a', failed('ImagePullFailed')),
      session('b', failed('ImagePullFailed')),
      session('c', failed('CrashLooping'), 'java'),
      session('d', starting),
      { ...session('e', failed('ImagePullFailed')), metadata: { name: 'e', uid: 'e', deletionTimestamp: 'now' } },
      session('f', { phase: 'Failed', error: { code: 553, reason: 'limit' } }),
    ] as Session[];
    const text = await new ServiceMetrics(caches(present).caches).registry.metrics();
    assert.equal(line(text, 'ide_cloud_sessions_failed', 'app_definition="python",reason="ImagePullFailed"'), '2');
    assert.equal(line(text, 'ide_cloud_sessions_failed', 'app_definition="java",reason="CrashLooping"'), '1');
    assert.equal(line(text, 'ide_cloud_sessions_failed', 'app_definition="python",reason="Failed"'), '1');
    assert.ok(!text.includes('alice'), 'no user in the metrics');
    assert.ok(!text.includes('session-'), 'no session name in the metrics');
  });

  it('the counter counts each session seen before it failed, once; not those first seen failed', async () => {
    const { caches: c, emit } = caches([]);
    const metrics = new ServiceMetrics(c);
    const counted = async () =>
      line(
        await metrics.registry.metrics(),
        'ide_cloud_session_start_failures_total',
        'app_definition="python",reason="ImagePullFailed"',
      );
    // Already failed when first seen (a restarted replica's first list): the gauge shows it, not the counter.
    emit('ADDED', session('old', failed('ImagePullFailed')));
    assert.equal(await counted(), undefined);
    emit('ADDED', session('new'));
    emit('MODIFIED', session('new', starting));
    emit('MODIFIED', session('new', failed('ImagePullFailed')));
    emit('MODIFIED', session('new', failed('ImagePullFailed')));
    emit('DELETED', session('new', failed('ImagePullFailed')));
    assert.equal(await counted(), '1');
  });
});
