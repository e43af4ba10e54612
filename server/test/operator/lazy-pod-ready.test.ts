// A lazy session is Ready when its own pod is: read from the pods cache, not from its workload's status
// (written later, by the controller manager).
import assert from 'node:assert/strict';
import type * as k8s from '@kubernetes/client-node';
import { LABELS } from '../../src/model/api-group.js';
import type { AppDefinition } from '../../src/model/app-definition.js';
import { findCondition } from '../../src/model/conditions.js';
import { SessionCondition, SessionReadyReason, type Session } from '../../src/model/session.js';
import { parseOperatorConfig } from '../../src/operator/config.js';
import { COMPONENT, sessionPodApp } from '../../src/operator/manifests.js';
import { RetryLater } from '../../src/operator/runtime/outcome.js';
import { Pass } from '../../src/operator/session/status.js';
import type { Guarded, SessionStepDeps } from '../../src/operator/session/steps/context.js';
import { readiness } from '../../src/operator/session/steps/readiness.js';

const session = {
  apiVersion: 'ide.cloud/v1beta10',
  kind: 'Session',
  metadata: {
    name: 'lazy-1',
    namespace: 'ns',
    uid: 'uid-new',
    generation: 1,
    creationTimestamp: new Date().toISOString(),
  },
  spec: { user: 'ada@example.org', appDefinition: 'js' },
  status: { startStrategy: 'lazy' },
} as unknown as Session;

function pod(app: string, ready: boolean, deleting = false): k8s.V1Pod {
  return {
    metadata: {
      name: `${app}-x`,
      labels: { [LABELS.session]: 'lazy-1', [LABELS.component]: COMPONENT.session, app },
      ...(deleting ? { deletionTimestamp: new Date() } : {}),
    },
    status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] },
  };
}

/** The readiness step over these pods (indexed by label as the operator's cache is): Ready or why not. */
async function readyWith(pods: k8s.V1Pod[]): Promise<string | undefined> {
  const deps = {
    config: parseOperatorConfig({ namespace: 'ns', sessionHost: 'ide.example.org' }),
    routes: { served: async () => true },
    pods: {
      byIndex: (_index: string, key: string) =>
        pods.filter((p) => Object.entries(p.metadata?.labels ?? {}).some(([k, v]) => `${k}=${v}` === key)),
    },
  } as unknown as SessionStepDeps;
  const guarded = { appDefinition: { spec: { timeout: 30 } } as unknown as AppDefinition } as Guarded;
  const pass = new Pass(session);
  const workload = { eager: false, backend: 'lazy-1' };
  try {
    await readiness({ ...guarded, deps, session, pass, workload });
  } catch (error) {
    if (!(error instanceof RetryLater)) throw error;
  }
  const ready = findCondition(pass.status.conditions, SessionCondition.ready);
  return ready?.status === 'True' ? (pass.status.url ? 'ready' : 'no url') : ready?.reason;
}

describe("a lazy session's readiness: its own pod", () => {
  const own = sessionPodApp(session);
  const namesake = sessionPodApp({ metadata: { name: 'lazy-1', uid: 'uid-old' } });

  it('is Ready with the URL once its pod is Ready, with no workload status at all', async () => {
    assert.equal(await readyWith([pod(own, true)]), 'ready');
  });

  it('waits while its pod is not Ready, or is being deleted', async () => {
    assert.equal(await readyWith([]), SessionReadyReason.podNotReady);
    assert.equal(await readyWith([pod(own, false)]), SessionReadyReason.podNotReady);
    assert.equal(await readyWith([pod(own, true, true)]), SessionReadyReason.podNotReady);
  });

  it("does not take a deleted namesake's Ready pod (same session label, another app) for its own", async () => {
    assert.equal(await readyWith([pod(namesake, true)]), SessionReadyReason.podNotReady);
    assert.equal(await readyWith([pod(namesake, true), pod(own, true)]), 'ready');
  });
});
