import http from 'node:http';
import type * as k8s from '@kubernetes/client-node';
import { dataBridgeEnabled, dataBridgePort, type AppDefinition } from '../../model/app-definition.js';
import type { Informer } from '../../kube/informer.js';
import { requestText, type TextAnswer } from '../../http/request-text.js';
import {
  BRIDGE_ANSWER_MAX_BYTES,
  DATA_BRIDGE_PATHS,
  DATA_BRIDGE_TOKEN_KEY,
  type SaveWorkRequest,
  type SaveWorkResult,
  type StopNotice,
  type BridgeActivity,
} from '../../model/data-bridge.js';
import { LABELS } from '../../model/api-group.js';
import { poolInstanceName, stripCredentials } from '../../model/names.js';
import type { Session } from '../../model/session.js';
import { bridgeTokenSecretName, SESSION_BRIDGE_TOKEN_KEY, sessionEnvSecretName, sessionPodApp } from '../manifests.js';
import { readBridgeSecret } from '../pool/bridge-secrets.js';
import { INDEX } from '../runtime/cache.js';
import { podReady } from '../runtime/objects.js';

/** Where a session's bridge answers, and the token it takes. */
export interface BridgeTarget {
  url: string;
  token: string;
  /** The token's entry in the cache: dropped when the bridge refuses it. */
  tokenKey?: string;
}

/** The operator's side of the bridge's end-of-session routes; each call fails with a short reason. */
export interface SessionBridgeApi {
  /** Whether the session's IDE runs a bridge at all: a started session of a data-bridge app definition. */
  hasBridge(session: Session, appDefinition: AppDefinition | undefined): boolean;
  /**
   * The bridge of the session's current pod, or undefined when no pod of it is ready; throws a
   * BridgeCallError when its token is missing.
   */
  locate(session: Session, appDefinition: AppDefinition): Promise<BridgeTarget | undefined>;
  notice(target: BridgeTarget, notice: StopNotice): Promise<void>;
  /** Seconds since the IDE last reported activity; null when it never did. */
  secondsSinceActivity(target: BridgeTarget): Promise<number | null>;
  /** Runs the save; `signal` gives up on it (the operator lost its leadership). */
  save(target: BridgeTarget, signal?: AbortSignal): Promise<SaveWorkResult>;
  /** Forgets what is kept of sessions no longer listed (their tokens). */
  retain(sessionUids: ReadonlySet<string>): void;
}

export class BridgeCallError extends Error {
  override readonly name = 'BridgeCallError';
}

/**
 * Calls the bridge of a session's pod on its address (the cluster network, the port the NetworkPolicy
 * opens to the operator), with the token read by name from its Secret, as the data injection does: a
 * warm instance's own Secret, or a lazy session's Secret (the session's own token). Pods come from the
 * operator's pods cache; a token is read once per session (a warm instance's is renewed when it
 * returns to the pool, so the next session's uid reads the new one) and again after a refusal.
 * Answers are read up to BRIDGE_ANSWER_MAX_BYTES: the student controls what listens on that port.
 */
export class SessionBridge implements SessionBridgeApi {
  /** Tokens by Secret key and session uid. */
  private readonly tokens = new Map<string, { uid: string; token: string }>();

  constructor(
    private readonly core: Pick<k8s.CoreV1Api, 'readNamespacedSecret'>,
    private readonly pods: Pick<Informer<k8s.V1Pod>, 'byIndex'>,
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
    const address = readyCachedPod(this.pods, namespace, where.podSelector)?.status?.podIP;
    if (!address) return undefined;
    const uid = session.metadata.uid ?? session.metadata.name;
    const tokenKey = `${namespace}/${where.token.name}/${where.token.key}/${uid}`;
    let token = this.tokens.get(tokenKey)?.token;
    if (token === undefined) {
      token = await readBridgeToken(this.core, namespace, where.token);
      if (token === undefined) throw new BridgeCallError('its token is missing (Secret or key)');
      this.tokens.set(tokenKey, { uid, token });
    }
    const host = address.includes(':') ? `[${address}]` : address;
    return { url: `http://${host}:${dataBridgePort(appDefinition.spec)}`, token, tokenKey };
  }

  retain(sessionUids: ReadonlySet<string>): void {
    for (const [key, entry] of this.tokens) if (!sessionUids.has(entry.uid)) this.tokens.delete(key);
  }

  async notice(target: BridgeTarget, notice: StopNotice): Promise<void> {
    await this.call(target, 'POST', DATA_BRIDGE_PATHS.notice, notice, this.timeouts.requestMs);
  }

  async secondsSinceActivity(target: BridgeTarget): Promise<number | null> {
    const answer = await this.call(target, 'GET', DATA_BRIDGE_PATHS.activity, undefined, this.timeouts.requestMs);
    const seconds: unknown = (answer as Partial<BridgeActivity>).secondsSinceActivity;
    if (seconds === null) return null;
    if (typeof seconds !== 'number' || !Number.isFinite(seconds) || seconds < 0) {
      throw new BridgeCallError('activity answered without secondsSinceActivity');
    }
    return seconds;
  }

  async save(target: BridgeTarget, signal?: AbortSignal): Promise<SaveWorkResult> {
    const request: SaveWorkRequest = { timeoutSeconds: Math.max(1, Math.floor(this.timeouts.saveMs / 1000)) };
    const answer = (await this.call(
      target,
      'POST',
      DATA_BRIDGE_PATHS.save,
      request,
      this.timeouts.saveMs,
      signal,
    )) as Record<string, unknown>;
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
    cancel?: AbortSignal,
  ): Promise<unknown> {
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = cancel ? AbortSignal.any([timeout, cancel]) : timeout;
    let response: PodAnswer;
    try {
      response = await podRequest(`${target.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${target.token}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal,
      });
    } catch (error) {
      if (error instanceof BridgeCallError) throw new BridgeCallError(`${path} ${error.message}`);
      const why = timeout.aborted
        ? 'timeout'
        : cancel?.aborted
          ? 'cancelled'
          : ((error as { code?: string }).code ?? 'error');
      throw new BridgeCallError(`${path} did not answer (${why})`);
    }
    if (response.status === 401 || response.status === 403) {
      if (target.tokenKey) this.tokens.delete(target.tokenKey);
    }
    if (!response.ok) throw new BridgeCallError(`${path} answered HTTP ${response.status}`);
    try {
      return JSON.parse(response.text) as unknown;
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
  token: SecretKey;
}

/** A session's bridge: on its warm instance's pods (the instance's token), or on its own lazy pods (its own). */
export function bridgeLocation(session: Session, appDefinition: AppDefinition): BridgeLocation {
  if (session.status?.startStrategy === 'eager') {
    const instance = poolInstanceName(appDefinition.metadata.name, Number(session.status.instanceId));
    return {
      podSelector: `${LABELS.poolInstance}=${instance}`,
      token: { name: bridgeTokenSecretName(instance), key: DATA_BRIDGE_TOKEN_KEY },
    };
  }
  return {
    // The label carries the session's uid: a pod of an earlier session of the same name never matches.
    podSelector: `app=${sessionPodApp(session)}`,
    token: { name: sessionEnvSecretName(session.metadata.name), key: SESSION_BRIDGE_TOKEN_KEY },
  };
}

/**
 * The connections to the pods' ports, kept a moment after a call: the injection's post follows its
 * health check on the same connection. An idle one goes after 4 s, before a Node server's own 5 s
 * (keepAliveTimeout), so a call never goes out on a connection the pod is closing.
 */
const podAgent = new http.Agent({ keepAlive: true, timeout: 4000 });

/** A pod's answer: its status (`ok`: a 2xx) and its body as text. */
export type PodAnswer = TextAnswer;

/**
 * One HTTP request to a port of an IDE Cloud pod (the cluster network), its answer read up to
 * BRIDGE_ANSWER_MAX_BYTES and given up past them (a BridgeCallError): the sender may be anything that
 * took the pod's port, sending without end.
 */
export function podRequest(
  url: string,
  init: { method?: string; headers?: Record<string, string>; body?: string; signal: AbortSignal },
): Promise<PodAnswer> {
  return requestText(url, {
    ...init,
    agent: podAgent,
    maxBytes: BRIDGE_ANSWER_MAX_BYTES,
    tooLong: (max) => new BridgeCallError(`answered more than ${max} bytes`),
  });
}

/** Whether a pod's labels match an equality selector (`a=b,c=d`, as bridgeLocation writes them). */
function matches(pod: k8s.V1Pod, selector: string): boolean {
  const labels = pod.metadata?.labels ?? {};
  return selector.split(',').every((term) => {
    const at = term.indexOf('=');
    return at > 0 && labels[term.slice(0, at)] === term.slice(at + 1);
  });
}

/** A ready pod of `pods` in the namespace that the selector matches, not being deleted. */
function readyPodOf(pods: readonly k8s.V1Pod[], namespace: string, podSelector: string): k8s.V1Pod | undefined {
  return firstReady(pods.filter((p) => (p.metadata?.namespace ?? namespace) === namespace && matches(p, podSelector)));
}

/**
 * A ready pod of the operator's pods cache that the selector matches, looked up by the selector's
 * first term in the cache's label index (a term is a `labelKey`), not found by a scan of every pod.
 */
export function readyCachedPod(
  pods: Pick<Informer<k8s.V1Pod>, 'byIndex'>,
  namespace: string,
  podSelector: string,
): k8s.V1Pod | undefined {
  const [term = ''] = podSelector.split(',');
  return readyPodOf(pods.byIndex(INDEX.label, term), namespace, podSelector);
}

function firstReady(pods: readonly k8s.V1Pod[]): k8s.V1Pod | undefined {
  return pods.find((p) => !p.metadata?.deletionTimestamp && !!p.status?.podIP && podReady(p));
}

/** The address of a ready pod the selector matches, not being deleted. */
export async function readyPodAddress(
  core: Pick<k8s.CoreV1Api, 'listNamespacedPod'>,
  namespace: string,
  podSelector: string,
): Promise<string | undefined> {
  const pods = await core.listNamespacedPod({ namespace, labelSelector: podSelector });
  return firstReady(pods.items)?.status?.podIP;
}

/** A bridge's token, read by name from the operator's Secret; undefined when the Secret or its key is missing. */
export async function readBridgeToken(
  core: Pick<k8s.CoreV1Api, 'readNamespacedSecret'>,
  namespace: string,
  token: SecretKey,
): Promise<string | undefined> {
  return (await readBridgeSecret(core, namespace, token.name))?.[token.key];
}
