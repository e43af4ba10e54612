import type * as k8s from '@kubernetes/client-node';
import { isNotFound } from '../../kube/client.js';
import { dataBridgeEnabled, dataBridgePort, type AppDefinition } from '../../model/app-definition.js';
import {
  DATA_BRIDGE_PATHS,
  DATA_BRIDGE_TOKEN_KEY,
  type SaveWorkResult,
  type StopNotice,
} from '../../model/data-bridge.js';
import { LABELS } from '../../model/api-group.js';
import { poolInstanceName, stripCredentials } from '../../model/names.js';
import type { Session } from '../../model/session.js';
import { bridgeTokenSecretName, SESSION_BRIDGE_TOKEN_KEY, sessionEnvSecretName, sessionPodApp } from '../manifests.js';

/** Where a session's bridge answers, and the token it takes. */
export interface BridgeTarget {
  url: string;
  token: string;
}

/** The operator's side of the bridge's end-of-session routes; each call fails with a short reason. */
export interface SessionBridgeApi {
  /** Whether the session's IDE runs a bridge at all: a started session of a data-bridge app definition. */
  hasBridge(session: Session, appDefinition: AppDefinition | undefined): boolean;
  /** The bridge of the session's current pod, or undefined when no pod of it is ready. */
  locate(session: Session, appDefinition: AppDefinition): Promise<BridgeTarget | undefined>;
  notice(target: BridgeTarget, notice: StopNotice): Promise<void>;
  /** Seconds since the IDE last reported activity; null when it never did. */
  secondsSinceActivity(target: BridgeTarget): Promise<number | null>;
  save(target: BridgeTarget): Promise<SaveWorkResult>;
}

export class BridgeCallError extends Error {
  override readonly name = 'BridgeCallError';
}

/**
 * Calls the bridge of a session's pod on its address (the cluster network, the port the NetworkPolicy
 * opens to the operator), with the token read by name from its Secret, as the data injection does: a
 * warm instance's own Secret, or a lazy session's Secret (the session's own token).
 */
export class SessionBridge implements SessionBridgeApi {
  constructor(
    private readonly core: Pick<k8s.CoreV1Api, 'listNamespacedPod' | 'readNamespacedSecret'>,
    private readonly namespace: string,
    private readonly timeouts: { requestMs: number; saveMs: number },
  ) {}

  hasBridge(session: Session, appDefinition: AppDefinition | undefined): boolean {
    if (!appDefinition || !dataBridgeEnabled(appDefinition.spec)) return false;
    const strategy = session.status?.startStrategy;
    if (strategy === 'eager') return session.status?.instanceId !== undefined;
    return strategy === 'lazy' || strategy === 'lazy-fallback';
  }

  async locate(session: Session, appDefinition: AppDefinition): Promise<BridgeTarget | undefined> {
    const namespace = session.metadata.namespace ?? this.namespace;
    const where = bridgeLocation(session, appDefinition);
    const address = await readyPodAddress(this.core, namespace, where.podSelector, where.accept);
    if (!address) return undefined;
    const token = await readBridgeToken(this.core, namespace, where.token);
    if (token === undefined) return undefined;
    const host = address.includes(':') ? `[${address}]` : address;
    return { url: `http://${host}:${dataBridgePort(appDefinition.spec)}`, token };
  }

  async notice(target: BridgeTarget, notice: StopNotice): Promise<void> {
    await this.call(target, 'POST', DATA_BRIDGE_PATHS.notice, notice, this.timeouts.requestMs);
  }

  async secondsSinceActivity(target: BridgeTarget): Promise<number | null> {
    const answer = await this.call(target, 'GET', DATA_BRIDGE_PATHS.activity, undefined, this.timeouts.requestMs);
    const seconds = (answer as { secondsSinceActivity?: unknown }).secondsSinceActivity;
    if (seconds === null) return null;
    if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) {
      throw new BridgeCallError('activity answered without secondsSinceActivity');
    }
    return seconds;
  }

  async save(target: BridgeTarget): Promise<SaveWorkResult> {
    const answer = (await this.call(target, 'POST', DATA_BRIDGE_PATHS.save, {}, this.timeouts.saveMs)) as Record<
      string,
      unknown
    >;
    const text = (value: unknown) => (typeof value === 'string' ? value.slice(0, 300) : '');
    if (answer.outcome === 'saved') {
      return { outcome: 'saved', branch: text(answer.branch), repository: stripCredentials(text(answer.repository)) };
    }
    if (answer.outcome === 'nothing-to-save') return { outcome: 'nothing-to-save' };
    if (answer.outcome === 'failed')
      return { outcome: 'failed', code: text(answer.code), message: text(answer.message) };
    throw new BridgeCallError('save answered without an outcome');
  }

  private async call(
    target: BridgeTarget,
    method: 'GET' | 'POST',
    path: string,
    body: unknown,
    timeoutMs: number,
  ): Promise<unknown> {
    let response: Response;
    try {
      response = await fetch(`${target.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${target.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      const e = error as { name?: string; cause?: { code?: string } };
      throw new BridgeCallError(
        `${path} did not answer (${e.name === 'TimeoutError' ? 'timeout' : (e.cause?.code ?? 'error')})`,
      );
    }
    const text = await response.text().catch(() => '');
    if (!response.ok) throw new BridgeCallError(`${path} answered HTTP ${response.status}`);
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw new BridgeCallError(`${path} answered no JSON`);
    }
  }
}

/** A key of a Secret. */
export interface SecretKey {
  name: string;
  key: string;
}

/** Where a session's bridge runs: which pods, and which key of which Secret holds its token. */
export interface BridgeLocation {
  podSelector: string;
  /** Refuses a pod the selector matches that is not the session's. */
  accept?: (pod: k8s.V1Pod) => boolean;
  token: SecretKey;
}

/** A session's bridge: on its warm instance's pods (the instance's token), or on its own lazy pods (its own). */
export function bridgeLocation(session: Session, appDefinition: AppDefinition): BridgeLocation {
  if (session.status?.startStrategy === 'eager') {
    const instance = poolInstanceName(appDefinition.metadata.name, Number(session.status.instanceId));
    return {
      podSelector: `${LABELS.poolInstance}=${instance}`,
      // A pod restarted for a workspace claim carries the session's label; an older one of the instance does not.
      accept: (pod) => [undefined, session.metadata.name].includes(pod.metadata?.labels?.[LABELS.session]),
      token: { name: bridgeTokenSecretName(instance), key: DATA_BRIDGE_TOKEN_KEY },
    };
  }
  return {
    // The label carries the session's uid: a pod of an earlier session of the same name never matches.
    podSelector: `app=${sessionPodApp(session)}`,
    token: { name: sessionEnvSecretName(session.metadata.name), key: SESSION_BRIDGE_TOKEN_KEY },
  };
}

/** The address of a ready pod the selector matches (and `accept` takes), not being deleted. */
export async function readyPodAddress(
  core: Pick<k8s.CoreV1Api, 'listNamespacedPod'>,
  namespace: string,
  podSelector: string,
  accept: (pod: k8s.V1Pod) => boolean = () => true,
): Promise<string | undefined> {
  const pods = await core.listNamespacedPod({ namespace, labelSelector: podSelector });
  return pods.items.find(
    (p) =>
      !p.metadata?.deletionTimestamp &&
      !!p.status?.podIP &&
      (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True') &&
      accept(p),
  )?.status?.podIP;
}

/** A bridge's token, read by name from the operator's Secret; undefined when the Secret or its key is missing. */
export async function readBridgeToken(
  core: Pick<k8s.CoreV1Api, 'readNamespacedSecret'>,
  namespace: string,
  token: SecretKey,
): Promise<string | undefined> {
  let secret: k8s.V1Secret;
  try {
    secret = await core.readNamespacedSecret({ name: token.name, namespace });
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  const encoded = secret.data?.[token.key];
  return encoded ? Buffer.from(encoded, 'base64').toString('utf8') : undefined;
}
