import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import * as k8s from '@kubernetes/client-node';
import { FIELD_MANAGER } from '../model/api-group.js';
import { CallSlots } from './call-slots.js';

/** Loads the kubeconfig: an explicit file, then $KUBECONFIG, then the in-cluster service account. */
export function loadKubeConfig(file?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (file) kc.loadFromFile(file);
  else kc.loadFromDefault();
  return kc;
}

const CONFIGURED = Symbol('ide-cloud.configured');
interface RequestContext {
  setHeaderParam(key: string, value: string): void;
  getSignal(): AbortSignal | undefined;
  setSignal(signal: AbortSignal): void;
}
type Hooks = {
  makeApiClient<T>(apiClientType: new (config: k8s.Configuration) => T): T;
  createAgent(cluster: unknown, options: Record<string, unknown>): unknown;
  applySecurityAuthentication(context: RequestContext): Promise<void>;
  applyToFetchOptions(options: unknown): Promise<{ headers: { set(key: string, value: string): void } }>;
};

/** How long one Kubernetes API call may take by default (a watch is not one call: see configureClient). */
export const DEFAULT_REQUEST_TIMEOUT_MS = 10_000;

/**
 * How many API calls the clients of one configured KubeConfig have in flight at once by default
 * (watches apart). A small API server is saturated by far fewer, so more in flight only shares its
 * time among them: a burst of launches would all finish late, and each call past the open
 * connections would cost a TLS handshake on both sides (client-node speaks HTTP/1.1, one call per
 * connection). Beyond it, calls wait their turn in order of issue (the calls ahead first:
 * `callsAhead`); the wait counts in their deadline.
 */
export const DEFAULT_REQUESTS_IN_FLIGHT = 16;

export interface ClientOptions {
  /** Deadline of each API call (request and answer); default DEFAULT_REQUEST_TIMEOUT_MS. */
  requestTimeoutMs?: number;
  /** API calls in flight at once (watches apart); default DEFAULT_REQUESTS_IN_FLIGHT. */
  requestsInFlight?: number;
}

/**
 * Makes a KubeConfig fit for a long-running client, once (later calls change nothing, so a
 * KubeConfig shared by two components keeps the first one's settings):
 * - one keep-alive agent: client-node 1.x builds a new https.Agent for every request, so every API
 *   call would pay a TCP and TLS handshake. The agent is made from the first request's options (the
 *   cluster's CA and client certificate, read from their files once: readCertificatesOnce; bearer
 *   tokens travel in headers, so a rotated token is still read per request);
 * - a deadline on every API call (`requestTimeoutMs`): a paused or partitioned API server accepts the
 *   connection and never answers, and without a deadline the call waits for the operating system to
 *   give up (minutes). When it passes, the call rejects with an AbortError (`isApiUnavailable`) and
 *   only its own connection is dropped; the pool stays. Every call of the generated API clients and of
 *   KubernetesObjectApi gets it, the informers' lists included. Watches (kube/watch.ts) do not: they
 *   are meant to stay open and are renewed by the informer (`rewatchIntervalMs`);
 * - a User-Agent (`userAgent`) naming the component, as client-go's clients do, so the API server's audit log and
 *   request metrics tell IDE Cloud's requests from everyone else's;
 * - at most `requestsInFlight` calls in flight (boundedRequests), for the API clients made from it
 *   (`makeApiClient`, KubernetesObjectApi) from then on.
 */
export function configureClient(kc: k8s.KubeConfig, userAgent: string, options: ClientOptions = {}): k8s.KubeConfig {
  const target = kc as unknown as Hooks & { [CONFIGURED]?: boolean };
  if (target[CONFIGURED]) return kc;
  target[CONFIGURED] = true;
  const { requestTimeoutMs = DEFAULT_REQUEST_TIMEOUT_MS, requestsInFlight = DEFAULT_REQUESTS_IN_FLIGHT } = options;
  readCertificatesOnce(kc);
  const createAgent = target.createAgent.bind(kc);
  let agent: unknown;
  // Idle connections stay open for the next burst (the calls' and the watches'), up to a bound.
  target.createAgent = (cluster, agentOptions) =>
    (agent ??= createAgent(cluster, { ...agentOptions, keepAlive: true, maxFreeSockets: 64 }));
  const httpApi = boundedRequests(requestsInFlight);
  target.makeApiClient = (apiClientType) => apiClientOf(kc, apiClientType, httpApi);
  // Called once per request of the generated clients and KubernetesObjectApi (never for a watch),
  // before it is sent: the deadline counts from here and covers the answer's body too.
  const authenticate = target.applySecurityAuthentication.bind(kc);
  target.applySecurityAuthentication = async (context) => {
    const deadline = AbortSignal.timeout(requestTimeoutMs);
    await authenticate(context);
    context.setHeaderParam('User-Agent', userAgent);
    const own = context.getSignal();
    context.setSignal(own ? AbortSignal.any([own, deadline]) : deadline);
  };
  // Watches (and exec, logs) build their requests from these options: no deadline here.
  const fetchOptions = target.applyToFetchOptions.bind(kc);
  target.applyToFetchOptions = async (fetchOpts) => {
    const result = await fetchOptions(fetchOpts);
    result.headers.set('User-Agent', userAgent);
    return result;
  };
  return kc;
}

/**
 * An API client of a configured KubeConfig whose calls have slots of their own, apart from the
 * shared `requestsInFlight`: for calls that must not wait behind a burst (the leader's Lease).
 */
export function apiClientApart<T>(
  kc: k8s.KubeConfig,
  apiClientType: new (config: k8s.Configuration) => T,
  requestsInFlight = 1,
): T {
  return apiClientOf(kc, apiClientType, boundedRequests(requestsInFlight));
}

/** client-node's own KubeConfig.makeApiClient, with `httpApi` as the HTTP library. */
function apiClientOf<T>(
  kc: k8s.KubeConfig,
  apiClientType: new (config: k8s.Configuration) => T,
  httpApi: k8s.HttpLibrary,
): T {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('No active cluster!');
  const baseServer = new k8s.ServerConfiguration(cluster.server, {});
  return new apiClientType(k8s.createConfiguration({ baseServer, authMethods: { default: kc }, httpApi }));
}

/** How a call tells its slot it goes ahead (`callsAhead`); taken off before the call is sent. */
const AHEAD_HEADER = 'x-ide-cloud-call-ahead';

type CallOptions = ReturnType<typeof k8s.setHeaderOptions>;

/**
 * Options of a call that waits for a slot before every call issued without them, behind only the
 * calls ahead issued earlier: for the call that finishes a launch, which should not wait behind the
 * calls that start newer ones. Each such call follows a call that started its launch, so the others
 * never wait longer than the launches in flight take.
 */
export function callsAhead(options?: CallOptions): CallOptions {
  return k8s.setHeaderOptions(AHEAD_HEADER, 'true', options);
}

/**
 * client-node's HTTP library with at most `limit` calls in flight (CallSlots: the calls ahead first,
 * then in order of issue). A call holds its slot until its answer's body is read: the answer is read
 * whole here.
 */
export function boundedRequests(limit: number): k8s.HttpLibrary {
  const slots = new CallSlots(limit);
  return k8s.wrapHttpLibrary({
    async send(request) {
      const headers = request.getHeaders();
      const ahead = headers[AHEAD_HEADER] !== undefined;
      delete headers[AHEAD_HEADER];
      // A wait cut short by the deadline fails as a call cut short in flight does (isApiUnavailable).
      await slots.acquire(request.getSignal(), { ahead }).catch(() => {
        throw new k8s.AbortError('The operation was aborted.');
      });
      try {
        const answer = await sendRequest(request);
        return new k8s.ResponseContext(
          answer.status,
          answer.headers,
          new k8s.SelfDecodingBody(Promise.resolve(answer.body)),
        );
      } finally {
        slots.release();
      }
    },
  });
}

/**
 * One call over node:http(s) on the request's agent (configureClient's keep-alive one), its answer read
 * whole. client-node's own library goes through node-fetch, whose layers (WHATWG headers, body streams)
 * cost half as much client CPU again as the call itself: about 0.65 ms against 0.41 per call, measured.
 * No Accept-Encoding is sent, so answers come uncompressed, as the watches' do. Fails as node:http does:
 * an AbortError when the signal aborts, the socket's error code (ECONNREFUSED, ECONNRESET…) otherwise
 * (isApiUnavailable knows both).
 */
function sendRequest(
  request: k8s.RequestContext,
): Promise<{ status: number; headers: Record<string, string>; body: Buffer }> {
  const url = new URL(request.getUrl());
  const body: unknown = request.getBody();
  if (body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)) {
    return Promise.reject(new TypeError('an API call with a body that is not a string or a Buffer'));
  }
  const headers: Record<string, string> = { ...request.getHeaders() };
  if (body !== undefined) headers['content-length'] = String(Buffer.byteLength(body));
  const transport = url.protocol === 'http:' ? http : https;
  const signal = request.getSignal();
  return new Promise((resolve, reject) => {
    const call = transport.request(
      url,
      { method: request.getHttpMethod(), headers, agent: request.getAgent() as http.Agent | undefined, signal },
      (response) => {
        const chunks: Buffer[] = [];
        let ended = false;
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.once('end', () => {
          ended = true;
          const answerHeaders: Record<string, string> = {};
          for (const [name, value] of Object.entries(response.headers)) {
            if (value !== undefined) answerHeaders[name] = Array.isArray(value) ? value.join(', ') : value;
          }
          resolve({ status: response.statusCode ?? 0, headers: answerHeaders, body: Buffer.concat(chunks) });
        });
        response.once('error', reject);
        // The connection went before the whole answer came (a reset, an abort mid-body).
        response.once('close', () => {
          if (!ended) reject(signal?.aborted ? new k8s.AbortError('The operation was aborted.') : connectionReset());
        });
      },
    );
    call.once('error', reject);
    call.end(body);
  });
}

function connectionReset(): Error {
  return Object.assign(new Error('the connection closed before the whole answer came'), { code: 'ECONNRESET' });
}

/**
 * The cluster's CA and the client certificate and key become data read once: client-node reads their
 * files synchronously on every request (on the event loop), and the one agent keeps what the first
 * request read anyway. Tokens stay as they are: a token file is read per request, so a rotated one is
 * used.
 */
function readCertificatesOnce(kc: k8s.KubeConfig): void {
  const data = (file: string) => readFileSync(file).toString('base64');
  kc.clusters = kc.clusters.map((c) => (c.caFile ? { ...c, caData: data(c.caFile), caFile: undefined } : c));
  kc.users = kc.users.map((u) => ({
    ...u,
    ...(u.certFile ? { certData: data(u.certFile), certFile: undefined } : {}),
    ...(u.keyFile ? { keyData: data(u.keyFile), keyFile: undefined } : {}),
  }));
}

/**
 * Why a call got no answer from the API server, or undefined when it got one (or failed otherwise):
 * `timeout` when the deadline of configureClient passed, `unreachable` when no connection could be
 * made or it broke before the answer (refused, reset, no route, DNS). Both are worth a retry later.
 */
export function isApiUnavailable(error: unknown): 'timeout' | 'unreachable' | undefined {
  if (error instanceof k8s.ApiException) return undefined;
  const e = error as { name?: unknown; type?: unknown; code?: unknown } | null;
  if (!e || typeof e !== 'object') return undefined;
  if (e.name === 'AbortError' || e.name === 'TimeoutError' || e.type === 'aborted') return 'timeout';
  if (e.name === 'FetchError' && (e.type === 'system' || e.type === 'request-timeout')) return 'unreachable';
  if (typeof e.code === 'string' && UNREACHABLE_CODES.has(e.code)) return 'unreachable';
  return undefined;
}

const UNREACHABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** Server-side apply of a whole object under IDE Cloud's one field manager. */
export async function applyObject<T extends k8s.KubernetesObject>(
  objects: k8s.KubernetesObjectApi,
  object: T,
  options: { force?: boolean; dryRun?: boolean } = {},
): Promise<T> {
  return objects.patch(
    object,
    undefined,
    options.dryRun ? 'All' : undefined,
    FIELD_MANAGER,
    options.force ?? true,
    k8s.PatchStrategy.ServerSideApply,
  );
}

const metadataOnly = k8s.setHeaderOptions('Accept', 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1');

/**
 * The metadata of a Secret or ConfigMap (undefined when there is none), read as PartialObjectMetadata:
 * a secret's data never reaches the reader. For the check of a session's env sources.
 */
export async function readMetadata(
  core: Pick<k8s.CoreV1Api, 'readNamespacedSecret' | 'readNamespacedConfigMap'>,
  namespace: string,
  kind: 'secret' | 'config map',
  name: string,
): Promise<{ labels?: Record<string, string> } | undefined> {
  try {
    const read =
      kind === 'secret'
        ? await core.readNamespacedSecret({ name, namespace }, metadataOnly)
        : await core.readNamespacedConfigMap({ name, namespace }, metadataOnly);
    return read.metadata ?? {};
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** For `.catch`: a 404 answers undefined (the object is not there), any other error is rethrown. */
export function undefinedIfNotFound(error: unknown): undefined {
  if (isNotFound(error)) return undefined;
  throw error;
}

/** HTTP status of a failed Kubernetes API call, or undefined for errors that are not API answers. */
export function apiStatus(error: unknown): number | undefined {
  if (error instanceof k8s.ApiException) return error.code;
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

export function isNotFound(error: unknown): boolean {
  return apiStatus(error) === 404;
}

export function isConflict(error: unknown): boolean {
  return apiStatus(error) === 409;
}

/**
 * What may be logged about any failure: a Kubernetes answer's status and reason, another error's name
 * and code; never a message, which can quote the object sent or the request's values.
 */
export function describeFailure(error: unknown): Record<string, unknown> {
  if (error instanceof k8s.ApiException) return describeKubernetesError(error);
  if (error instanceof Error) return { errorName: error.name, code: (error as { code?: unknown }).code };
  return { errorType: typeof error };
}

/**
 * What may be logged about a failed Kubernetes API call: its status and reason, never its message or
 * body, which can quote the object sent (env values, tokens).
 */
export function describeKubernetesError(error: k8s.ApiException<unknown>): Record<string, unknown> {
  return { kubernetesStatus: error.code, kubernetesReason: apiAnswer(error).reason };
}

/**
 * The Status a failed API call answered with (its body, parsed when it came as text): empty when
 * there is none. Its message can quote the object sent: never log it.
 */
export function apiAnswer(error: unknown): { reason?: unknown; message?: unknown } {
  let body = (error as { body?: unknown } | null)?.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      body = undefined;
    }
  }
  return body && typeof body === 'object' ? (body as { reason?: unknown; message?: unknown }) : {};
}
