/**
 * 4. The session's environment: pushed to a warm instance's data bridge (session/injection.ts), or in
 * a lazy session's Secret; told as the EnvInjected condition.
 */
import type * as k8s from '@kubernetes/client-node';
import { LABELS } from '../../../model/api-group.js';
import { dataBridgePort, type AppDefinition } from '../../../model/app-definition.js';
import { findCondition, type Condition } from '../../../model/conditions.js';
import { SessionCondition, SessionEnvInjectedReason, type Session } from '../../../model/session.js';
import { AUTH_PROXY_ADMISSION_PORT_NAME, AUTH_PROXY_CONTAINER } from '../../auth-proxy.js';
import { bridgeTokenSecretName } from '../../manifests.js';
import { deploymentReady } from '../../runtime/objects.js';
import type { Pass } from '../status.js';
import type { ServedStep, SessionStepDeps } from './context.js';

/** Where a warm instance's bridge answers: its pods and the app definition's bridge port. */
function instanceBridge(appDefinition: AppDefinition, instanceName: string) {
  return { podSelector: `${LABELS.poolInstance}=${instanceName}`, port: dataBridgePort(appDefinition.spec) };
}

/** An injection the pass waits for: its first try, and the end of the pass's following (DataInjector.follow). */
export interface Injecting {
  firstTry: Promise<void>;
  /** `recorded`: the pass's status says the injection ended (recordEnvironment). */
  unfollow: (recorded: boolean) => void;
}

/**
 * 4. Environment, eager path: pushed to the data bridge in the background, started before the
 * route, only once the reserved instance's current pod serves (a recycled instance can still show its
 * previous pod, another user's, which must never receive these values). Returns undefined when no
 * injection runs, else its first try, which the reconciler waits for no longer than the route's write
 * (the URL never waits for a bridge): when it ends first, the status that carries the URL carries
 * EnvInjected too, in one status write. The pass follows the injection until it has read its state
 * (recordEnvironment): an end meanwhile wakes no other pass.
 */
export function startInjection({ deps, session, appDefinition, workload }: ServedStep): Injecting | undefined {
  if (!workload.eager || !deploymentReady(workload.deployment)) return undefined;
  if (injectionEnded(session.status?.conditions)) return { firstTry: Promise.resolve(), unfollow: () => undefined };
  const admissionPort = admissionPortOf(workload.deployment);
  const uid = session.metadata.uid ?? session.metadata.name;
  deps.injector.ensure(session, {
    ...instanceBridge(appDefinition, workload.backend),
    tokenSecret: bridgeTokenSecretName(workload.backend),
    ...(admissionPort === undefined ? {} : { admissionPort }),
  });
  return { firstTry: deps.injector.attempted(uid), unfollow: deps.injector.follow(uid) };
}

/**
 * The port of the proxy's admission in the instance's pod template: present with an identity provider
 * on instances of this shape (auth-proxy.ts); an older instance's bridge writes the proxy's file.
 */
function admissionPortOf(deployment: k8s.V1Deployment | undefined): number | undefined {
  const proxy = deployment?.spec?.template.spec?.containers.find((c) => c.name === AUTH_PROXY_CONTAINER);
  return proxy?.ports?.find((p) => p.name === AUTH_PROXY_ADMISSION_PORT_NAME)?.containerPort;
}

/** 4 (cont.). The environment's state as the EnvInjected condition. */
export function recordEnvironment(step: ServedStep, injecting: boolean): void {
  const { deps, session, pass, workload } = step;
  if (injecting) recordInjection(deps, session, pass);
  else if (workload.eager)
    pass.condition({
      type: SessionCondition.envInjected,
      status: 'Unknown',
      reason: SessionEnvInjectedReason.waitingForInstance,
      message: 'the reserved instance is not ready yet',
    });
  else
    pass.condition({
      type: SessionCondition.envInjected,
      status: 'True',
      reason: SessionEnvInjectedReason.podEnvironment,
      message: "values in the session's Secret, referenced from the pod",
    });
}

/** The injection's state as the EnvInjected condition; counts only in final states, so waiting writes nothing. */
function recordInjection(deps: SessionStepDeps, session: Session, pass: Pass): void {
  if (injectionEnded(pass.status.conditions)) return;
  const state = deps.injector.state(session.metadata.uid ?? session.metadata.name);
  if (!state) return;
  const max = deps.config.bridgeHealthAttempts;
  const detail = `health checks ${state.attempts}/${max}, posts ${state.postAttempts}${state.lastError ? `, last error: ${state.lastError}` : ''}`;
  if (state.phase === 'Injected') {
    pass.condition({
      type: SessionCondition.envInjected,
      status: 'True',
      reason: SessionEnvInjectedReason.injected,
      message: detail,
    });
  } else if (state.phase === 'Failed') {
    pass.condition({
      type: SessionCondition.envInjected,
      status: 'False',
      reason: SessionEnvInjectedReason.injectionFailed,
      message: detail,
    });
    // Warn and continue: the session serves without its values.
    pass.event('Warning', 'InjectionFailed', `data injection failed (${detail})`);
  } else {
    // One condition for every step before the end, so the steps cost no status write.
    pass.condition({
      type: SessionCondition.envInjected,
      status: 'Unknown',
      reason: SessionEnvInjectedReason.injecting,
      message: 'sending the values to the data bridge',
    });
  }
}

/** The injection ended (the values delivered, or given up on): EnvInjected True, or False for a failure. */
export function injectionEnded(conditions: readonly Condition[] | undefined): boolean {
  const injected = findCondition(conditions, SessionCondition.envInjected);
  return (
    injected?.status === 'True' ||
    (injected?.status === 'False' && injected.reason === SessionEnvInjectedReason.injectionFailed)
  );
}
