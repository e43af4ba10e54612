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
import { bridgeTokenSecretName } from '../manifests.js';

/** Where a session's bridge answers, and the token it takes. */
export interface BridgeTarget {
  url: string;
  token: string;
}

/** The operator's side of the bridge's end-of-session routes; each call fails with a short reason. */
export interface SessionBridgeApi {
  /** Whether the session's IDE runs a bridge at all: an eager session of a data-bridge app definition. */
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
 * Calls the bridge of an eager session's warm instance on its pod address (the cluster network, the
 * port the NetworkPolicy opens to the operator), with the instance's token read by name from its
 * Secret, as the data injection does. Lazy sessions run no bridge.
 */
export class SessionBridge implements SessionBridgeApi {
  constructor(
    private readonly core: Pick<k8s.CoreV1Api, 'listNamespacedPod' | 'readNamespacedSecret'>,
    private readonly namespace: string,
    private readonly timeouts: { requestMs: number; saveMs: number },
  ) {}

  hasBridge(session: Session, appDefinition: AppDefinition | undefined): boolean {
    return (
      !!appDefinition &&
      dataBridgeEnabled(appDefinition.spec) &&
      session.status?.startStrategy === 'eager' &&
      session.status.instanceId !== undefined
    );
  }

  async locate(session: Session, appDefinition: AppDefinition): Promise<BridgeTarget | undefined> {
    const instance = poolInstanceName(appDefinition.metadata.name, Number(session.status?.instanceId));
    const namespace = session.metadata.namespace ?? this.namespace;
    const pods = await this.core.listNamespacedPod({
      namespace,
      labelSelector: `${LABELS.poolInstance}=${instance}`,
    });
    // A pod restarted for a workspace claim carries the session's label; an older one of the instance does not.
    const address = pods.items.find((p) => {
      const holder = p.metadata?.labels?.[LABELS.session];
      return (
        !p.metadata?.deletionTimestamp &&
        (holder === undefined || holder === session.metadata.name) &&
        !!p.status?.podIP &&
        (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True')
      );
    })?.status?.podIP;
    if (!address) return undefined;
    let secret: k8s.V1Secret;
    try {
      secret = await this.core.readNamespacedSecret({ name: bridgeTokenSecretName(instance), namespace });
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
    const encoded = secret.data?.[DATA_BRIDGE_TOKEN_KEY];
    if (!encoded) return undefined;
    const host = address.includes(':') ? `[${address}]` : address;
    return {
      url: `http://${host}:${dataBridgePort(appDefinition.spec)}`,
      token: Buffer.from(encoded, 'base64').toString('utf8'),
    };
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
