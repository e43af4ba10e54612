import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { setCondition } from '../../src/model/conditions.js';
import { isActiveSession, isSessionFailed, SessionCondition, SessionFailureReason } from '../../src/model/session.js';
import { Delay } from '../../src/operator/runtime/outcome.js';
import { podVerdict, startDeadlineAt, startDeadlineFailure } from '../../src/operator/session/start-failure.js';

const NOW = Date.parse('2026-01-01T00:10:00Z');
const ago = (ms: number) => new Date(NOW - ms).toISOString();

function pod(status: k8s.V1PodStatus, deleting = false): k8s.V1Pod {
  return {
    metadata: { name: 'p', ...(deleting ? { deletionTimestamp: new Date(NOW) } : {}) },
    status,
  };
}

const waiting = (reason: string, extra: Partial<k8s.V1ContainerStatus> = {}): k8s.V1ContainerStatus => ({
  name: 'python',
  image: 'ide/python:1',
  imageID: '',
  ready: false,
  restartCount: 0,
  state: { waiting: { reason, message: `${reason} details` } },
  ...extra,
});

describe('start failure: pod states mapped to a failed start', () => {
  it('a pull error fails only past its bound from the pod start, and asks to look again at that bound', () => {
    const fresh = podVerdict(
      [pod({ startTime: ago(5000) as never, containerStatuses: [waiting('ErrImagePull')] })],
      NOW,
    );
    assert.equal(fresh.failure, undefined);
    assert.equal(fresh.recheckAtMs, NOW - 5000 + Delay.imagePullBound);
    const old = podVerdict(
      [pod({ startTime: ago(Delay.imagePullBound) as never, containerStatuses: [waiting('ImagePullBackOff')] })],
      NOW,
    );
    assert.equal(old.failure?.reason, SessionFailureReason.imagePullFailed);
    assert.match(
      old.failure!.message,
      /^the IDE image could not be pulled: ide\/python:1 \(ImagePullBackOff details\)$/,
    );
  });

  it('an image that can never be pulled fails at once', () => {
    const v = podVerdict([pod({ startTime: ago(0) as never, containerStatuses: [waiting('InvalidImageName')] })], NOW);
    assert.equal(v.failure?.reason, SessionFailureReason.imagePullFailed);
  });

  it('an image missing where images are preloaded (pull policy Never) says how to get it there', () => {
    const missing = [pod({ startTime: ago(0) as never, containerStatuses: [waiting('ErrImageNeverPull')] })];
    const hint = 'load it with `load {image}`';
    assert.equal(
      podVerdict(missing, NOW, { missingImageHint: hint }).failure?.message,
      'the IDE image could not be pulled: ide/python:1 (ErrImageNeverPull details): load it with `load ide/python:1`',
    );
    assert.doesNotMatch(podVerdict(missing, NOW).failure!.message, /load/);
    const invalid = [pod({ startTime: ago(0) as never, containerStatuses: [waiting('InvalidImageName')] })];
    assert.doesNotMatch(podVerdict(invalid, NOW, { missingImageHint: hint }).failure!.message, /load/);
  });

  it('CrashLoopBackOff, CreateContainerConfigError (init containers too) and Unschedulable fail at once', () => {
    const crash = podVerdict(
      [
        pod({
          containerStatuses: [
            waiting('CrashLoopBackOff', { restartCount: 3, lastState: { terminated: { exitCode: 2 } } }),
          ],
        }),
      ],
      NOW,
    );
    assert.deepEqual(crash.failure, {
      code: 500,
      reason: 'CrashLooping',
      message: 'the IDE keeps crashing at start: container python restarted 3 times, last exit code 2',
    });
    const config = podVerdict([pod({ initContainerStatuses: [waiting('CreateContainerConfigError')] })], NOW);
    assert.equal(config.failure?.reason, SessionFailureReason.containerConfigError);
    assert.match(config.failure!.message, /CreateContainerConfigError details/);
    const unschedulable = podVerdict(
      [
        pod({
          conditions: [
            { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/1 nodes are available' },
          ],
        }),
      ],
      NOW,
    );
    assert.equal(unschedulable.failure?.reason, SessionFailureReason.unschedulable);
    assert.equal(unschedulable.failure?.message, 'no node of the cluster can run the IDE (0/1 nodes are available)');
  });

  it('leaves alone a pod being deleted, a preemption or a claim binding under way, and pods merely starting', () => {
    const crashing = { containerStatuses: [waiting('CrashLoopBackOff')] };
    assert.deepEqual(podVerdict([pod(crashing, true)], NOW), {});
    const preempting = pod({
      nominatedNodeName: 'n1',
      conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable' }],
    });
    assert.deepEqual(podVerdict([preempting], NOW), {});
    const claimPending = pod({
      conditions: [
        {
          type: 'PodScheduled',
          status: 'False',
          reason: 'Unschedulable',
          message: '0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims.',
        },
      ],
    });
    assert.deepEqual(podVerdict([claimPending], NOW), {});
    assert.deepEqual(podVerdict([pod({ containerStatuses: [waiting('ContainerCreating')] })], NOW), {});
    assert.deepEqual(podVerdict([], NOW), {});
  });

  it('the start deadline counts from the creation', () => {
    assert.equal(startDeadlineAt({ metadata: { creationTimestamp: ago(0) } }, 30), NOW + 30_000);
    assert.equal(startDeadlineAt({ metadata: {} }, 30), undefined);
    assert.deepEqual(startDeadlineFailure(30), {
      code: 551,
      reason: 'StartDeadlineExceeded',
      message: 'the IDE did not start within 30 s',
    });
  });

  it('a failed start reads as Failed (terminal, inactive) wherever the state is read', () => {
    for (const reason of Object.values(SessionFailureReason)) {
      const session = {
        metadata: { name: 's' },
        status: { conditions: setCondition(undefined, { type: SessionCondition.ready, status: 'False', reason }) },
      };
      assert.equal(isSessionFailed(session), true, reason);
      assert.equal(isActiveSession(session), false, reason);
    }
  });
});
