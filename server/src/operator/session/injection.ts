import { envSourceRefusal, type EnvSourceKind } from '../../model/session-env.js';
import type * as k8s from '@kubernetes/client-node';
import { isNotFound } from '../../kube/client.js';
import {
  BRIDGE_ANSWER_MAX_BYTES,
  DATA_BRIDGE_RESERVATION_HEADER,
  DATA_BRIDGE_TOKEN_KEY,
} from '../../model/data-bridge.js';
import type { Session } from '../../model/session.js';
import type { OperatorConfig } from '../config.js';
import { mergeSessionEnvironment, operatorEnvironment } from './env.js';
import type { Logger } from '../runtime/logger.js';
import { readBridgeToken, readCappedText, readyPodAddress } from './session-bridge.js';

export interface InjectionTarget {
  /** Label selector of the pods of the instance. */
  podSelector: string;
  port: number;
  /** The Secret holding the instance's data-bridge token (sent as `Authorization: Bearer`). */
  tokenSecret: string;
}

export interface InjectionState {
  phase: 'WaitingForBridge' | 'Posting' | 'Injected' | 'Failed';
  /** Health checks made so far. */
  attempts: number;
  postAttempts: number;
  /** Last error, without any value of the environment. */
  lastError?: string;
}

type Run = {
  state: InjectionState;
  cancelled: boolean;
  /** Settles once the first try is over: the injection ended, or it waits to try again. */
  tried: Promise<void>;
  markTried: () => void;
};

/**
 * Data injection on the eager path: polls the instance's bridge `GET /health` (pod address, cluster
 * network) up to `bridgeHealthAttempts` times, then sends `POST /data {"environment": …}` once,
 * retrying a failed POST with backoff. Runs in the background per session (the session can be
 * handled before injection ends); the outcome is kept in memory and the session key is enqueued on
 * every change, so the reconciler writes it as the EnvInjected condition. The POST carries the
 * instance's token and the reservation (the Session's uid); the bridge takes one injection per
 * reservation and answers a repeated one 409 `{"reservation": "same"}`, which counts as injected
 * (a retry whose first answer was lost, or an injection started again after an operator restart).
 */
export class DataInjector {
  private readonly runs = new Map<string, Run>();

  constructor(
    /** Reads pods (their addresses) and the config maps and secrets of the session's environment. */
    private readonly core: Pick<
      k8s.CoreV1Api,
      'listNamespacedPod' | 'readNamespacedConfigMap' | 'readNamespacedSecret'
    >,
    private readonly config: OperatorConfig,
    private readonly onChange: (sessionName: string) => void,
    private readonly log: Logger,
  ) {}

  state(uid: string): InjectionState | undefined {
    return this.runs.get(uid)?.state;
  }

  /** Starts the injection for the session unless one runs already; returns its state. */
  ensure(session: Session, target: InjectionTarget): InjectionState {
    const uid = session.metadata.uid ?? session.metadata.name;
    const existing = this.runs.get(uid);
    if (existing) return existing.state;
    let markTried = () => {};
    const tried = new Promise<void>((resolve) => (markTried = resolve));
    const run: Run = {
      state: { phase: 'WaitingForBridge', attempts: 0, postAttempts: 0 },
      cancelled: false,
      tried,
      markTried,
    };
    this.runs.set(uid, run);
    void this.execute(session, target, run)
      .catch((error: unknown) => {
        run.state = { ...run.state, phase: 'Failed', lastError: describe(error) };
        this.onChange(session.metadata.name);
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
    const ended = run.state.phase === 'Injected' || run.state.phase === 'Failed';
    if (ended) run.markTried();
    if (!run.cancelled && ended && run.state.phase !== before) this.onChange(session.metadata.name);
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

  /** The instance's data-bridge token, read by name from its Secret (the operator's own, not an env source). */
  private async bridgeToken(target: InjectionTarget, namespace: string): Promise<string> {
    const token = await readBridgeToken(this.core, namespace, { name: target.tokenSecret, key: DATA_BRIDGE_TOKEN_KEY });
    if (token === undefined) throw new Error(`data bridge token ${target.tokenSecret} not found`);
    return token;
  }

  private async execute(session: Session, target: InjectionTarget, run: Run): Promise<void> {
    const namespace = session.metadata.namespace ?? this.config.namespace;
    const timeout = this.config.bridgeRequestTimeoutMs;
    let address: string | undefined;
    for (let attempt = 1; ; attempt++) {
      if (run.cancelled) return;
      let error: string | undefined;
      try {
        address = await readyPodAddress(this.core, namespace, target.podSelector);
        if (!address) error = 'no ready pod';
        else {
          const response = await fetch(`http://${address}:${target.port}/health`, {
            signal: AbortSignal.timeout(timeout),
          });
          await readCappedText(response, BRIDGE_ANSWER_MAX_BYTES);
          if (!response.ok) error = `health answered HTTP ${response.status}`;
        }
      } catch (e) {
        error = describe(e);
      }
      this.update(session, run, { attempts: attempt, lastError: error });
      if (!error) break;
      if (attempt >= this.config.bridgeHealthAttempts) {
        this.update(session, run, { phase: 'Failed' });
        return;
      }
      run.markTried();
      await sleep(this.config.bridgeHealthIntervalMs);
    }
    this.update(session, run, { phase: 'Posting' });
    let body: string;
    let token: string;
    try {
      // The user goes with the values: the bridge makes them the only user its proxy admits.
      body = JSON.stringify({ environment: await this.environment(session), user: session.spec.user });
      token = await this.bridgeToken(target, namespace);
    } catch (e) {
      this.update(session, run, { phase: 'Failed', lastError: describe(e) });
      return;
    }
    for (let post = 1; ; post++) {
      if (run.cancelled) return;
      let error: string | undefined;
      try {
        const response = await fetch(`http://${address}:${target.port}/data`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${token}`,
            [DATA_BRIDGE_RESERVATION_HEADER]: session.metadata.uid ?? session.metadata.name,
          },
          body,
          signal: AbortSignal.timeout(timeout),
        });
        const answer = await readCappedText(response, BRIDGE_ANSWER_MAX_BYTES);
        if (response.status === 409) {
          if (!sameReservation(answer)) {
            // Final: the bridge holds another reservation's values, and only a restart clears them.
            this.update(session, run, {
              phase: 'Failed',
              postAttempts: post,
              lastError: 'data answered HTTP 409: the bridge holds values of another reservation',
            });
            return;
          }
        } else if (!response.ok) error = `data answered HTTP ${response.status}`;
      } catch (e) {
        error = describe(e);
      }
      if (!error) {
        this.log.info(
          { session: session.metadata.name, keys: Object.keys(JSON.parse(body).environment).length },
          'injected',
        );
        this.update(session, run, { phase: 'Injected', postAttempts: post, lastError: undefined });
        return;
      }
      this.update(session, run, { postAttempts: post, lastError: error });
      if (post >= this.config.bridgePostAttempts) {
        this.update(session, run, { phase: 'Failed' });
        return;
      }
      run.markTried();
      await sleep(this.config.bridgeHealthIntervalMs * 2 ** (post - 1));
    }
  }
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
  const e = error as { name?: string; message?: string; cause?: { code?: string } };
  return e?.cause?.code ?? (e?.name === 'TimeoutError' ? 'timeout' : (e?.message ?? String(error)).slice(0, 200));
}
