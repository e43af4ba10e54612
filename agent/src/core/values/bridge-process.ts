// The data bridge's own process, read over loopback (the CLI front beside the IDE): a warm instance gets
// its values there as soon as it is claimed, before any browser starts the IDE's extension host. The
// bridge holds each `GET /data?wait=…` until the values are injected or its bounded wait ends, and the
// agent asks again after that: no busy poll, and no bound on how long an unclaimed instance waits.
// The bridge's token (DATA_BRIDGE_TOKEN) goes to the bridge only, which must be on this host.
import {
  BRIDGE_PROCESS_URL,
  DATA_BRIDGE_PATHS,
  DATA_BRIDGE_TOKEN_ENV,
  DATA_BRIDGE_URL_ENV,
  DATA_WAIT_MAX_SECONDS,
  type DataAnswer,
} from '../../../../server/src/model/data-bridge.js';
import { AgentError } from '../errors.js';
import type { Log } from '../log.js';
import { pickValues, withEnvironment, type ResolvedValues } from './data-bridge.js';

export interface BridgeProcessOptions {
  /** DATA_BRIDGE_URL: http://127.0.0.1:<port> (loopback only). */
  url: string | undefined;
  /** DATA_BRIDGE_TOKEN, sent as the bearer token. */
  token: string | undefined;
  /** Where keys the bridge lacks are filled from. */
  env: NodeJS.ProcessEnv;
  log?: Log;
  /** Seconds each request waits at the bridge (default DATA_WAIT_MAX_SECONDS). */
  waitSeconds?: number;
  /** How long a bridge that never answered is waited for (it may still be starting); default 2 minutes. */
  startGraceMs?: number;
  /** Pause after a failed request. */
  retryMs?: number;
  signal?: AbortSignal;
  /** Injected for tests. */
  fetch?: typeof fetch;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

const sleepReal = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits, however long, until the bridge process holds the injected values; then takes them. */
export async function waitForBridgeProcess(options: BridgeProcessOptions): Promise<ResolvedValues> {
  const url = options.url?.trim() ?? '';
  if (!BRIDGE_PROCESS_URL.test(url)) {
    throw new AgentError(
      'BridgeUnavailable',
      `${DATA_BRIDGE_URL_ENV} is not a bridge on this host (http://127.0.0.1:<port>)`,
      'Start the agent with --from-bridge only where the session image runs the data bridge',
    );
  }
  const token = options.token?.trim() ?? '';
  if (!token) {
    throw new AgentError(
      'BridgeUnavailable',
      `${DATA_BRIDGE_TOKEN_ENV} is not set`,
      'The bridge answers its token only',
    );
  }
  const doFetch = options.fetch ?? fetch;
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? sleepReal;
  const log = options.log ?? (() => {});
  const waitSeconds = options.waitSeconds ?? DATA_WAIT_MAX_SECONDS;
  const graceMs = options.startGraceMs ?? 120_000;
  const retryMs = options.retryMs ?? 1000;
  const endpoint = `${url.replace(/\/$/, '')}${DATA_BRIDGE_PATHS.data}?wait=${waitSeconds}`;
  const start = now();
  let answered = false;
  let lastProblem = '';

  log('waiting for the launch values at the data bridge');
  for (;;) {
    options.signal?.throwIfAborted();
    let problem: string;
    try {
      const response = await doFetch(endpoint, {
        headers: { authorization: `Bearer ${token}` },
        signal: AbortSignal.any([
          AbortSignal.timeout((waitSeconds + 15) * 1000),
          ...(options.signal ? [options.signal] : []),
        ]),
      });
      if (response.status === 401 || response.status === 403) {
        throw new AgentError(
          'BridgeRefused',
          `the data bridge refused its token (HTTP ${response.status})`,
          `${DATA_BRIDGE_TOKEN_ENV} must be the token the bridge process was started with`,
        );
      }
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      const body = (await response.json()) as Partial<Record<keyof DataAnswer, unknown>>;
      answered = true;
      if (body.injected === true) {
        return { ...withEnvironment(pickValues(body.environment), options.env), outcome: 'complete' };
      }
      continue; // the wait ended without values: ask again at once
    } catch (error) {
      if (error instanceof AgentError) throw error;
      options.signal?.throwIfAborted();
      // fetch's own words ("fetch failed") and its cause's code (ECONNREFUSED); never the token.
      const cause = (error as { cause?: { code?: unknown } }).cause?.code;
      problem = `${error instanceof Error ? error.message : String(error)}${typeof cause === 'string' ? ` (${cause})` : ''}`;
    }
    if (!answered && now() - start >= graceMs) {
      throw new AgentError(
        'BridgeUnavailable',
        `the data bridge at ${url} did not answer within ${Math.round(graceMs / 1000)} s (${problem})`,
        'Check that the bridge process started (its lines start with [data-bridge])',
      );
    }
    if (problem !== lastProblem) log(`waiting for the data bridge: ${problem}`);
    lastProblem = problem;
    await sleep(retryMs);
  }
}
