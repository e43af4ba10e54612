/**
 * What bounds a session's start: the one mapping of its pods' states to a failure, and the start
 * deadline. Pure: the readiness step reads the pods from the cache and throws what this answers
 * (a FailObject with the machine reason, or a RetryLater at the moment to look again).
 */
import type * as k8s from '@kubernetes/client-node';
import { ErrorCode } from '../../model/error-codes.js';
import { SessionFailureReason, type SessionFailureReasonValue } from '../../model/session.js';
import { Delay } from '../runtime/outcome.js';

/** Why a session cannot start: the code and words of `status.error`, the machine reason of Ready. */
export interface StartFailure {
  code: number;
  reason: SessionFailureReasonValue;
  message: string;
}

/** What a starting session's pods say: a failure, or (a pull error within its bound) when to look again. */
export type PodVerdict = { failure: StartFailure } | { failure?: undefined; recheckAtMs?: number };

/** Waiting reasons of a pull that may still succeed (the kubelet retries with backoff): bounded. */
const PULL_RETRYING = new Set(['ErrImagePull', 'ImagePullBackOff']);
/** Waiting reasons of a pull that never will. */
const PULL_IMPOSSIBLE = new Set(['InvalidImageName', 'ErrImageNeverPull']);

/**
 * The scheduler also says Unschedulable while a pod's claim is being bound or provisioned (a
 * workspace created an instant before its session): that ends by itself, so only the deadline ends it.
 */
const WAITING_FOR_VOLUME = /persistentvolumeclaim|persistent volume/i;

const MAX_DETAIL = 300;
const detail = (text: string | undefined): string =>
  text ? ` (${text.length > MAX_DETAIL ? `${text.slice(0, MAX_DETAIL)}…` : text})` : '';

/**
 * The verdict on a starting session's pods (pods being deleted are not looked at): the first
 * unrecoverable state found fails the session. Unrecoverable: an image pull that failed past
 * `Delay.imagePullBound` from the pod's start (or one that never can), a container in
 * CrashLoopBackOff, a container whose configuration cannot be met (CreateContainerConfigError), and
 * a pod the scheduler found no node for (Unschedulable) with no preemption under way and no claim
 * still to be bound.
 */
export function podVerdict(
  pods: readonly k8s.V1Pod[],
  now: number,
  { missingImageHint }: { missingImageHint?: string } = {},
): PodVerdict {
  let recheckAtMs: number | undefined;
  for (const pod of pods) {
    if (pod.metadata?.deletionTimestamp) continue;
    const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    if (
      scheduled?.status === 'False' &&
      scheduled.reason === 'Unschedulable' &&
      !pod.status?.nominatedNodeName &&
      !WAITING_FOR_VOLUME.test(scheduled.message ?? '')
    ) {
      return {
        failure: {
          code: ErrorCode.internal,
          reason: SessionFailureReason.unschedulable,
          message: `no node of the cluster can run the IDE${detail(scheduled.message)}`,
        },
      };
    }
    const started = Date.parse(String(pod.status?.startTime ?? pod.metadata?.creationTimestamp ?? '')) || now;
    const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
    for (const container of statuses) {
      const waiting = container.state?.waiting;
      const why = waiting?.reason ?? '';
      if (PULL_IMPOSSIBLE.has(why) || (PULL_RETRYING.has(why) && now - started >= Delay.imagePullBound)) {
        const image = container.image ?? container.name;
        const hint =
          why === 'ErrImageNeverPull' && missingImageHint ? `: ${missingImageHint.replaceAll('{image}', image)}` : '';
        return {
          failure: {
            code: ErrorCode.internal,
            reason: SessionFailureReason.imagePullFailed,
            message: `the IDE image could not be pulled: ${image}${detail(waiting?.message)}${hint}`,
          },
        };
      }
      if (PULL_RETRYING.has(why)) {
        const at = started + Delay.imagePullBound;
        recheckAtMs = recheckAtMs === undefined ? at : Math.min(recheckAtMs, at);
      }
      if (why === 'CrashLoopBackOff') {
        const exit = container.lastState?.terminated?.exitCode;
        return {
          failure: {
            code: ErrorCode.internal,
            reason: SessionFailureReason.crashLooping,
            message: `the IDE keeps crashing at start: container ${container.name} restarted ${container.restartCount} times${exit === undefined ? '' : `, last exit code ${exit}`}`,
          },
        };
      }
      if (why === 'CreateContainerConfigError') {
        return {
          failure: {
            code: ErrorCode.internal,
            reason: SessionFailureReason.containerConfigError,
            message: `the IDE cannot start: the configuration of container ${container.name} is incomplete${detail(waiting?.message)}`,
          },
        };
      }
    }
  }
  return recheckAtMs === undefined ? {} : { recheckAtMs };
}

/** When a session that has not served by then fails: its creation plus the start deadline (none without a creation time). */
export function startDeadlineAt(
  session: { metadata: { creationTimestamp?: unknown } },
  deadlineSeconds: number,
): number | undefined {
  const created = Date.parse(String(session.metadata.creationTimestamp ?? ''));
  return Number.isNaN(created) ? undefined : created + deadlineSeconds * 1000;
}

/** The failure of a session still not serving at its start deadline. */
export function startDeadlineFailure(deadlineSeconds: number): StartFailure {
  return {
    code: ErrorCode.launchTimeout,
    reason: SessionFailureReason.startDeadlineExceeded,
    message: `the IDE did not start within ${deadlineSeconds} s`,
  };
}
