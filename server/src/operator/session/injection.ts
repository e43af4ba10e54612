import { envSourceRefusal, type EnvSourceKind } from '../../model/session-env.js';
import type * as k8s from '@kubernetes/client-node';
import { isNotFound } from '../../kube/client.js';
import {
  AUTH_PROXY_ADMISSION_TOKEN_KEY,
  DATA_BRIDGE_RESERVATION_HEADER,
  DATA_BRIDGE_TOKEN_KEY,
} from '../../model/data-bridge.js';
import type { Session } from '../../model/session.js';
import type { OperatorConfig } from '../config.js';
import { mergeSessionEnvironment, operatorEnvironment } from './env.js';
import type { Logger } from '../runtime/logger.js';
import type { Informer } from '../../kube/informer.js';
import { BridgeSecrets } from '../pool/bridge-secrets.js';
import { podRequest, readyCachedPod, readyPodAddress } from './session-bridge.js';

export interface InjectionTarget {
  /** Label selector of the pods of the instance. */
  podSelector: string;
  port: number;
  /** The Secret holding the instance's data-bridge token (sent as `Authorization: Bearer`). */
  tokenSecret: string;
  /**
   * The port of the proxy's admission, where the session's user goes (identity provider, an instance
   * of this shape), its token in `tokenSecret` too. Without it, the user goes with the values (an
   * instance an older operator made, whose bridge writes the proxy's file).
   */
  admissionPort?: number;
}

export interface InjectionState {
  phase: 'WaitingForBridge' | 'Posting' | 'Injected' | 'Failed';
  /** Health checks made so far. */
  attempts: number;
  postAttempts: number;
  /** Last error, without any value of the environment. */
  lastError?: string;
}

/** How the values' delivery to the bridge ended. */
type Delivery = { phase: 'Injected'; keys: number; lastError?: undefined } | { phase: 'Failed'; lastError: string };

/** The POST /data of a session: its body (the values) and the instance's bridge token. */
type ValuesPost = { body: string; token: string; keys: number };

/** How one POST /data went: taken (or taken before: 409 same), refused for good (409 other), or why not. */
type PostAnswer = { taken: true } | { refused: string } | { error: string };

/** The delivery an answered post ended: the values taken, or refused for good. */
function deliveryOf(answer: Exclude<PostAnswer, { error: string }>, values: ValuesPost): Delivery {
  return 'taken' in answer ? { phase: 'Injected', keys: values.keys } : { phase: 'Failed', lastError: answer.refused };
}

type Run = {
  sessionName: string;
  state: InjectionState;
  /**
   * The instance's bridge Secret (the bridge's and the admission's token), read once per injection,
   * from its start: while the session's values are read, not after them. A failed read is told where
   * a token is needed (instanceToken).
   */
  tokens: Promise<Record<string, string> | undefined>;
  cancelled: boolean;
  /** Settles once the first try is over: the injection ended, or it waits to try again. */
  tried: Promise<void>;
  markTried: () => void;
  /** Passes that will read the state after the first try (`follow`): they, not a wake, take an end meanwhile. */
  followers: number;
  /** The end came while followed: the last follower to let go tells it unless its pass recorded it. */
  endUnseen: boolean;
};

/**
 * Data injection on the eager path: sends `POST /data {"environment": …}` to the bridge of the
 * instance's ready pod (pod address, cluster network) at once; a bridge that listens takes them, so
 * that post is its first health check too. When it does not answer, the bridge's `GET /health` is
 * polled up to `bridgeHealthAttempts` checks in all, then the values are posted again, a failed POST
 * retried with backoff. Runs in the background per session (the session can be
 * handled before injection ends); the outcome is kept in memory and the session key is enqueued at
 * its end (unless the pass that follows it reads it: `follow`), so the reconciler writes it as the
 * EnvInjected condition. The POST carries the instance's token and the reservation (the Session's
 * uid); the bridge takes one injection per reservation and answers a repeated one 409
 * `{"reservation": "same"}`, which counts as injected (a retry whose first answer was lost, or an
 * injection started again after an operator restart).
 */
export class DataInjector {
  private readonly runs = new Map<string, Run>();
  /** Where the instances' tokens come from. */
  private readonly secrets: Pick<BridgeSecrets, 'read'>;

  constructor(
    /** Reads pods (their addresses) and the config maps and secrets of the session's environment. */
    private readonly core: Pick<
      k8s.CoreV1Api,
      'listNamespacedPod' | 'readNamespacedConfigMap' | 'readNamespacedSecret'
    >,
    private readonly config: OperatorConfig,
    private readonly onChange: (sessionName: string) => void,
    private readonly log: Logger,
    private readonly sources: {
      /** The operator's pods cache: where the instance's ready pod is found (without it, one list per attempt). */
      pods?: Pick<Informer<k8s.V1Pod>, 'byIndex'>;
      /** The bridge Secrets the operator wrote (without it, each Secret is read once from the API server). */
      secrets?: Pick<BridgeSecrets, 'read'>;
    } = {},
  ) {
    this.secrets = sources.secrets ?? new BridgeSecrets(core, config.namespace);
  }

  state(uid: string): InjectionState | undefined {
    return this.runs.get(uid)?.state;
  }

  /**
   * A pass that waits for the first try and reads the state after it (the status that carries the URL
   * then carries the values' arrival): an end meanwhile is its to write, not a reason to wake the
   * session for another pass. Answers the end of the following, told whether the pass recorded the
   * end: one that came meanwhile and was not recorded (the pass stopped short of it) wakes the session.
   */
  follow(uid: string): (recorded: boolean) => void {
    const run = this.runs.get(uid);
    if (!run) return () => undefined;
    run.followers++;
    let followed = true;
    return (recorded) => {
      if (!followed) return;
      followed = false;
      run.followers--;
      if (run.followers > 0 || !run.endUnseen) return;
      run.endUnseen = false;
      if (!recorded && !run.cancelled) this.onChange(run.sessionName);
    };
  }

  /** Starts the injection for the session unless one runs already; returns its state. */
  ensure(session: Session, target: InjectionTarget): InjectionState {
    const uid = session.metadata.uid ?? session.metadata.name;
    const existing = this.runs.get(uid);
    if (existing) return existing.state;
    let markTried = () => {};
    const tried = new Promise<void>((resolve) => (markTried = resolve));
    const run: Run = {
      sessionName: session.metadata.name,
      state: { phase: 'WaitingForBridge', attempts: 0, postAttempts: 0 },
      tokens: this.secrets.read(target.tokenSecret),
      cancelled: false,
      tried,
      markTried,
      followers: 0,
      endUnseen: false,
    };
    run.tokens.catch(() => undefined);
    this.runs.set(uid, run);
    void this.execute(session, target, run)
      .catch((error: unknown) => {
        run.state = { ...run.state, phase: 'Failed', lastError: describe(error) };
        this.tellEnd(run);
      })
      .finally(() => run.markTried());
    return run.state;
  }

  /**
   * Settles once the session's injection has made its first try: ended (Injected or Failed), or
   * waiting to try again (the bridge not up yet, a refused post). At once when none runs. A pass
   * that finds the instance ready waits for it, so the status that carries the URL carries the
   * values' arrival too when the bridge takes them at once.
   */
  attempted(uid: string): Promise<void> {
    return this.runs.get(uid)?.tried ?? Promise.resolve();
  }

  /** One GET /health of a bridge: undefined when it answers 200, else why not. Never rejects. */
  private async health(address: string, port: number): Promise<string | undefined> {
    try {
      const { ok, status } = await podRequest(`http://${address}:${port}/health`, {
        signal: AbortSignal.timeout(this.config.bridgeRequestTimeoutMs),
      });
      return ok ? undefined : `health answered HTTP ${status}`;
    } catch (e) {
      return describe(e);
    }
  }

  forget(uid: string): void {
    const run = this.runs.get(uid);
    if (run) {
      run.cancelled = true;
      run.markTried();
    }
    this.runs.delete(uid);
  }

  stop(): void {
    for (const run of this.runs.values()) {
      run.cancelled = true;
      run.markTried();
    }
    this.runs.clear();
  }

  /**
   * Keeps the state; the reconciler hears only of the end (Injected or Failed): every step before it
   * shows as the same condition, so waking it for them would write nothing.
   */
  private update(session: Session, run: Run, patch: Partial<InjectionState>): void {
    const before = run.state.phase;
    run.state = { ...run.state, ...patch };
    const ended = isEnd(run.state);
    if (ended) run.markTried();
    if (!run.cancelled && ended && run.state.phase !== before) this.tellEnd(run);
  }

  /** The session hears of the end: from the pass that follows the injection, else by a wake. */
  private tellEnd(run: Run): void {
    if (run.followers > 0) run.endUnseen = true;
    else this.onChange(run.sessionName);
  }

  private async environment(session: Session): Promise<Record<string, string>> {
    const namespace = session.metadata.namespace ?? this.config.namespace;
    const configMaps = [];
    for (const name of session.spec.envVarsFromConfigMaps ?? []) {
      try {
        configMaps.push(usable('config map', name, await this.core.readNamespacedConfigMap({ name, namespace })));
      } catch (error) {
        if (isNotFound(error)) throw new Error(`config map ${name} not found`);
        throw error;
      }
    }
    const secrets = [];
    for (const name of session.spec.envVarsFromSecrets ?? []) {
      try {
        secrets.push(usable('secret', name, await this.core.readNamespacedSecret({ name, namespace })));
      } catch (error) {
        if (isNotFound(error)) throw new Error(`secret ${name} not found`);
        throw error;
      }
    }
    return {
      ...mergeSessionEnvironment({ envVars: session.spec.envVars, configMaps, secrets }),
      ...operatorEnvironment(session),
    };
  }

  /** A token of the instance's bridge Secret, read by name once per injection (the operator's own, not an env source). */
  private async instanceToken(run: Run, target: InjectionTarget, key: string): Promise<string> {
    const token = (await run.tokens)?.[key];
    if (token === undefined) throw new Error(`${key} of ${target.tokenSecret} not found`);
    return token;
  }

  /** The address of the instance's ready pod: from the pods cache when the operator has one. */
  private async podAddress(namespace: string, podSelector: string): Promise<string | undefined> {
    const { pods } = this.sources;
    if (pods) return readyCachedPod(pods, namespace, podSelector)?.status?.podIP;
    return readyPodAddress(this.core, namespace, podSelector);
  }

  /**
   * The values to the bridge and, beside them, the session's user to the proxy's admission: the
   * injection ends when both have (the URL waits for its end), and fails when either fails.
   */
  private async execute(session: Session, target: InjectionTarget, run: Run): Promise<void> {
    const namespace = session.metadata.namespace ?? this.config.namespace;
    const [values, admission] = await Promise.all([
      this.deliver(session, target, run),
      target.admissionPort === undefined
        ? undefined
        : this.admit(session, { ...target, admissionPort: target.admissionPort }, namespace, run),
    ]);
    if (run.cancelled) return;
    if (values.phase === 'Injected' && admission === undefined) {
      this.log.info({ session: session.metadata.name, keys: values.keys }, 'injected');
      this.update(session, run, { phase: 'Injected', lastError: undefined });
    } else {
      this.update(session, run, { phase: 'Failed', lastError: values.lastError ?? admission });
    }
  }

  /**
   * PUT /users {"user"} to the proxy's admission of the instance's ready pod, retried while the pod or
   * the admission is not up yet. Returns undefined once the user is admitted, else why not.
   */
  private async admit(
    session: Session,
    target: InjectionTarget & { admissionPort: number },
    namespace: string,
    run: Run,
  ): Promise<string | undefined> {
    let token: string;
    try {
      token = await this.instanceToken(run, target, AUTH_PROXY_ADMISSION_TOKEN_KEY);
    } catch (e) {
      return `admission token: ${describe(e)}`;
    }
    const body = JSON.stringify({ user: session.spec.user });
    for (let attempt = 1; ; attempt++) {
      if (run.cancelled) return 'cancelled';
      let error: string;
      try {
        const address = await this.podAddress(namespace, target.podSelector);
        if (!address) error = 'no ready pod';
        else {
          const { ok, status } = await podRequest(`http://${address}:${target.admissionPort}/users`, {
            method: 'PUT',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
            body,
            signal: AbortSignal.timeout(this.config.bridgeRequestTimeoutMs),
          });
          if (ok) return undefined;
          error = `admission answered HTTP ${status}`;
          // A refusal (token, body, another user admitted) is final; only the admission's not being up is not.
          if (status < 500) return error;
        }
      } catch (e) {
        error = `admission: ${describe(e)}`;
      }
      if (attempt >= this.config.bridgeHealthAttempts) return error;
      await sleep(this.config.bridgeHealthIntervalMs);
    }
  }

  /**
   * The bridge of the instance's ready pod, asked until it answers: first by posting the values (a
   * bridge that listens takes them), then by its GET /health. Its address once it answers, with the
   * delivery when the first post ended it; else why not.
   */
  private async answeringBridge(
    session: Session,
    target: InjectionTarget,
    run: Run,
    values: ValuesPost,
  ): Promise<{ address: string; delivered?: Delivery } | { error: string }> {
    const namespace = session.metadata.namespace ?? this.config.namespace;
    for (let attempt = 1; ; attempt++) {
      if (run.cancelled) return { error: 'cancelled' };
      let error: string | undefined;
      let address: string | undefined;
      let delivered: Delivery | undefined;
      try {
        address = await this.podAddress(namespace, target.podSelector);
        if (!address) error = 'no ready pod';
        else if (attempt > 1) error = await this.health(address, target.port);
        else {
          const answer = await this.post(address, target, values, session);
          if ('error' in answer) error = answer.error;
          else delivered = deliveryOf(answer, values);
        }
      } catch (e) {
        error = describe(e);
      }
      this.update(session, run, { attempts: attempt, lastError: error, ...(delivered ? { postAttempts: 1 } : {}) });
      if (!error && address) return { address, delivered };
      if (attempt >= this.config.bridgeHealthAttempts) return { error: error ?? 'no ready pod' };
      run.markTried();
      await sleep(this.config.bridgeHealthIntervalMs);
    }
  }

  /** The session's POST /data: the values (read once per injection) and the instance's token. */
  private async valuesPost(session: Session, target: InjectionTarget, run: Run): Promise<ValuesPost> {
    const environment = await this.environment(session);
    // The user goes to the proxy's admission; only an older instance's bridge writes the proxy's
    // file, and a bridge that is not told a user writes nothing, whatever its environment says.
    const body = JSON.stringify(
      target.admissionPort === undefined ? { environment, user: session.spec.user } : { environment },
    );
    const token = await this.instanceToken(run, target, DATA_BRIDGE_TOKEN_KEY);
    return { body, token, keys: Object.keys(environment).length };
  }

  /** One POST /data to the bridge at `address`, carrying the reservation (the session's uid). */
  private async post(
    address: string,
    target: InjectionTarget,
    values: ValuesPost,
    session: Session,
  ): Promise<PostAnswer> {
    try {
      const response = await podRequest(`http://${address}:${target.port}/data`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${values.token}`,
          [DATA_BRIDGE_RESERVATION_HEADER]: session.metadata.uid ?? session.metadata.name,
        },
        body: values.body,
        signal: AbortSignal.timeout(this.config.bridgeRequestTimeoutMs),
      });
      if (response.status === 409) {
        // Final: the bridge holds another reservation's values, and only a restart clears them.
        return sameReservation(response.text)
          ? { taken: true }
          : { refused: 'data answered HTTP 409: the bridge holds values of another reservation' };
      }
      return response.ok ? { taken: true } : { error: `data answered HTTP ${response.status}` };
    } catch (e) {
      return { error: describe(e) };
    }
  }

  /**
   * The values to the bridge: posted at once, and when the bridge did not answer, its health polled,
   * then posted again, a failed post retried; returns how it ended.
   */
  private async deliver(session: Session, target: InjectionTarget, run: Run): Promise<Delivery> {
    let values: ValuesPost;
    try {
      values = await this.valuesPost(session, target, run);
    } catch (e) {
      return { phase: 'Failed', lastError: describe(e) };
    }
    const answering = await this.answeringBridge(session, target, run, values);
    if ('error' in answering) return { phase: 'Failed', lastError: answering.error };
    if (answering.delivered) return answering.delivered;
    this.update(session, run, { phase: 'Posting' });
    for (let post = 1; ; post++) {
      if (run.cancelled) return { phase: 'Failed', lastError: 'cancelled' };
      const answer = await this.post(answering.address, target, values, session);
      if (!('error' in answer)) {
        this.update(session, run, { postAttempts: post });
        return deliveryOf(answer, values);
      }
      this.update(session, run, { postAttempts: post, lastError: answer.error });
      if (post >= this.config.bridgePostAttempts) return { phase: 'Failed', lastError: answer.error };
      run.markTried();
      await sleep(this.config.bridgeHealthIntervalMs * 2 ** (post - 1));
    }
  }
}

/** The injection is over: the values delivered, or given up on. */
function isEnd(state: InjectionState): boolean {
  return state.phase === 'Injected' || state.phase === 'Failed';
}

/** Whether a 409 of the bridge says this reservation's values are there already. */
function sameReservation(answer: string): boolean {
  try {
    return (JSON.parse(answer) as { reservation?: unknown }).reservation === 'same';
  } catch {
    return false;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** An error as text fit for a condition message: the error's kind and message, never a request body. */
/** The data of an env source, once it shows it is still marked for session use (checked again here). */
function usable(
  kind: EnvSourceKind,
  name: string,
  object: { metadata?: { labels?: Record<string, string> }; data?: Record<string, string> },
): Record<string, string> | undefined {
  const refusal = envSourceRefusal(kind, name, object.metadata ?? {});
  if (refusal) throw new Error(refusal.reason);
  return object.data;
}

function describe(error: unknown): string {
  const e = error as { name?: string; message?: string; code?: unknown; cause?: { name?: string } };
  if (e?.name === 'AbortError' && e.cause?.name === 'TimeoutError') return 'timeout';
  // A system error's code (ECONNREFUSED…); an API error's code is its HTTP status, and its message says more.
  return (
    (typeof e?.code === 'string' && e.code !== 'ABORT_ERR' ? e.code : undefined) ??
    (e?.message ?? String(error)).slice(0, 200)
  );
}
