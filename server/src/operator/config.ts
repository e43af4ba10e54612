import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { z } from 'zod';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../kube/client.js';

const bool = z
  .union([z.boolean(), z.string()])
  .transform((v) => (typeof v === 'boolean' ? v : ['1', 'true', 'yes', 'on'].includes(v.trim().toLowerCase())));
const int = (min: number) => z.coerce.number().int().min(min);
/** A JSON value given as text (from the environment) or as is (from code). */
const json = <T extends z.ZodTypeAny>(schema: T) =>
  z.preprocess((v) => {
    if (typeof v !== 'string') return v;
    try {
      return JSON.parse(v) as unknown;
    } catch {
      return v;
    }
  }, schema);

/** A pod toleration, as Kubernetes writes it (V1Toleration). */
const TolerationSchema = z
  .object({
    key: z.string().optional(),
    operator: z.enum(['Exists', 'Equal']).optional(),
    value: z.string().optional(),
    effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
    tolerationSeconds: z.number().int().optional(),
  })
  .strict();

/** Typed configuration of the operator, checked at start-up. Durations are milliseconds. */
/** The leader election's Lease, unless configured otherwise (a warm instance's reservation is a Lease too, named after it). */
export const DEFAULT_LEASE_NAME = 'ide-cloud-operator';

export const OperatorConfigSchema = z
  .object({
    /** Namespace whose AppDefinitions, Workspaces and Sessions are reconciled. */
    namespace: z.string().min(1),
    /** Path to a kubeconfig; unset: $KUBECONFIG, then in-cluster. */
    kubeconfig: z.string().optional(),
    /** operator.eagerStart: keep warm pools and reserve instances for new sessions. */
    eagerStart: bool.default(true),
    /** operator.sessionsPerUser: concurrent sessions per user. */
    sessionsPerUser: int(1).default(1),
    sessionHost: z.string().min(1).default('ide.localtest.me'),
    sessionScheme: z.enum(['http', 'https']).default('http'),
    /**
     * The port of session URLs when the ingress serves on another than the scheme's default (a local
     * ingress on a loopback port, npm start); the Ingress rules name the host alone.
     */
    sessionPort: int(1).max(65535).optional(),
    /**
     * The ingress as the operator reaches it (e.g. `http://traefik.traefik.svc`, or npm start's Traefik
     * on loopback): a starting session's URL is handed out only once a GET of its route through the
     * ingress is answered by the session (routes/served.ts), so no browser meets the ingress's 404
     * while it takes a new route up. Unset: once the pod is Ready and the route written.
     */
    routeCheckUrl: z.string().url().optional(),
    /** IngressClass of the shared session Ingress; unset: the cluster's default class. */
    ingressClassName: z.string().min(1).optional(),
    /** Image of the authentication proxy sidecar of every session pod (images/auth-proxy). */
    authProxyImage: z.string().min(1).default('ide-cloud/auth-proxy:0.1.0'),
    authProxyPort: int(1).default(8080),
    /**
     * Port of the proxy's admission (images/auth-proxy/admission), where the operator names a warm
     * instance's user at the claim; the chart's policies open it to the operator only.
     */
    authProxyAdmissionPort: int(1).default(4181),
    /**
     * Port where the proxy container answers the IDE container's readiness probe (admission/main.go:
     * the pod is Ready the moment the IDE listens); the kubelet asks it, from the node.
     */
    authProxyReadyPort: int(1).default(4182),
    /**
     * Secret of the installation's session sign-in: `cookie-secret` (the proxies' shared cookie key, so
     * one sign-in serves every session of the host) and, with an identity provider, `client-secret`.
     */
    authProxySecretName: z.string().min(1).default('ide-cloud-auth-proxy'),
    /**
     * The identity provider the session proxies sign users in with; unset: anonymous mode, where the
     * session's URL key is its only credential. With it, only the session's user passes its proxy.
     */
    sessionIssuer: z.string().url().optional(),
    sessionClientId: z.string().min(1).default('ide-cloud-sessions'),
    /** The token claim holding the user, as the service reads it (its IDENTITY_PROVIDER_USER_CLAIM). */
    sessionUserClaim: z.string().min(1).default('email'),
    /** An audience besides the client id that bearer tokens to a session may carry (the service's). */
    sessionAudience: z.string().min(1).optional(),
    /**
     * Placement of every session pod the operator creates (warm instances, lazy sessions and their
     * sidecars): a node selector and tolerations, e.g. to keep IDEs on nodes of their own. JSON in the
     * environment. Unset: the scheduler's choice.
     */
    sessionNodeSelector: json(z.record(z.string(), z.string())).optional(),
    sessionTolerations: json(z.array(TolerationSchema)).optional(),
    /**
     * imagePullPolicy of the IDE containers (and their sidecars). Unset: Kubernetes' default (Always for
     * a `:latest` tag); IfNotPresent or Never where images are preloaded onto the nodes.
     */
    sessionImagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
    /**
     * Where images are preloaded onto the nodes (pull policy Never): how to get a missing one there,
     * added to the failure of a session whose image is not on its node, `{image}` standing for the
     * image (npm start names its build command).
     */
    missingImageHint: z.string().min(1).optional(),
    configStoreMountPath: z.string().default('/ide-cloud/config'),
    workspaceStorageSize: z.string().default('1Gi'),
    workspaceStorageClass: z.string().optional(),
    /** What happens to a workspace's claim when the workspace is deleted. */
    workspaceReclaimPolicy: z.enum(['Delete', 'Retain']).default('Delete'),
    /**
     * Empty claims kept provisioned and bound (standby/reconciler.ts): a new workspace whose first
     * session starts lazily takes one instead of waiting for the provisioner; 0: none.
     */
    standbyClaims: int(0).max(100).default(0),
    /**
     * Image of the pod that makes a standby claim bind where the storage class binds on first use
     * (WaitForFirstConsumer): it only has to start, and goes once the claim is bound. The kubelet's
     * own sandbox image is on every node.
     */
    claimBinderImage: z.string().min(1).default('registry.k8s.io/pause:3.10'),
    /** Data bridge: GET /health attempts and the pause between them, then POST /data retries. */
    bridgeHealthAttempts: int(1).default(60),
    bridgeHealthIntervalMs: int(1).default(1000),
    bridgePostAttempts: int(1).default(5),
    bridgeRequestTimeoutMs: int(1).default(5000),
    /** monitor.enable and monitor.activityTracker.enable: idle sessions are stopped only when both are on. */
    monitorEnabled: bool.default(true),
    activityTrackerEnabled: bool.default(true),
    activityIntervalMs: int(10).default(60_000),
    /** How long a stop waits for the bridge to save the student's work (saveWorkOnStop) before it goes on. */
    saveWorkTimeoutMs: int(1).default(60_000),
    /** Hard lifetime of a session in minutes; 0: none. */
    maxSessionLifetimeMinutes: int(0).default(0),
    /**
     * Lazy starts (a session's own Deployment, beyond the warm pool) admitted per second, first come
     * first served (session/admission.ts); 0: no gate, every lazy start goes at once.
     */
    lazyStartsPerSecond: z.coerce.number().min(0).max(10_000).default(0),
    /** How many lazy starts the gate lets through at once after a quiet spell (its token bucket's size). */
    lazyStartBurst: int(1).default(10),
    /** Watch connections are renewed this often (from the last resourceVersion), because watches can stall silently. */
    rewatchIntervalMs: int(100).default(300_000),
    /**
     * Deadline of each Kubernetes API call (not of watches, which stay open and are renewed): a call
     * the API server does not answer in time fails, and its work item is retried with backoff.
     */
    apiRequestTimeoutMs: int(100).default(DEFAULT_REQUEST_TIMEOUT_MS),
    /** Session reconcile workers (app definitions and workspaces use at most 2): launches wait mostly on API calls, so many run at once. */
    workers: int(1).default(16),
    /**
     * Elect one leader through a coordination.k8s.io Lease, whatever the number of replicas: two
     * operators never act together (a rolling update overlaps the old and the new pod). A single
     * replica takes a free Lease at once. Off only for a test or tool that needs it explicitly.
     */
    leaderElection: bool.default(true),
    leaseName: z.string().default(DEFAULT_LEASE_NAME),
    /** Holder identity in the Lease: unique per operator started (two in one process never share it). */
    identity: z
      .string()
      .min(1)
      .default(() => `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`),
    leaseDurationMs: int(100).default(15_000),
    leaseRenewIntervalMs: int(50).default(2_000),
  })
  .strict();
export type OperatorConfig = z.output<typeof OperatorConfigSchema>;
export type OperatorConfigInput = z.input<typeof OperatorConfigSchema>;

/** Scheme, host and (when not the scheme's default) port of every session URL. */
export function sessionOrigin(config: Pick<OperatorConfig, 'sessionScheme' | 'sessionHost' | 'sessionPort'>): string {
  const port = config.sessionPort === undefined ? '' : `:${config.sessionPort}`;
  return `${config.sessionScheme}://${config.sessionHost}${port}`;
}

export function parseOperatorConfig(input: OperatorConfigInput): OperatorConfig {
  const result = OperatorConfigSchema.safeParse(input);
  if (!result.success) {
    const issues = result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid operator configuration: ${issues}`);
  }
  return result.data;
}

/** Environment variable of each configuration key. */
export const OPERATOR_ENV: Record<keyof OperatorConfig, string> = {
  namespace: 'IDE_CLOUD_NAMESPACE',
  kubeconfig: 'KUBECONFIG',
  eagerStart: 'IDE_CLOUD_EAGER_START',
  sessionsPerUser: 'IDE_CLOUD_SESSIONS_PER_USER',
  sessionHost: 'IDE_CLOUD_SESSION_HOST',
  sessionScheme: 'IDE_CLOUD_SESSION_SCHEME',
  sessionPort: 'IDE_CLOUD_SESSION_PORT',
  routeCheckUrl: 'IDE_CLOUD_ROUTE_CHECK_URL',
  ingressClassName: 'IDE_CLOUD_INGRESS_CLASS_NAME',
  authProxyImage: 'IDE_CLOUD_AUTH_PROXY_IMAGE',
  authProxyPort: 'IDE_CLOUD_AUTH_PROXY_PORT',
  authProxyAdmissionPort: 'IDE_CLOUD_AUTH_PROXY_ADMISSION_PORT',
  authProxyReadyPort: 'IDE_CLOUD_AUTH_PROXY_READY_PORT',
  authProxySecretName: 'IDE_CLOUD_AUTH_PROXY_SECRET',
  sessionIssuer: 'IDE_CLOUD_SESSION_ISSUER',
  sessionClientId: 'IDE_CLOUD_SESSION_CLIENT_ID',
  sessionUserClaim: 'IDE_CLOUD_SESSION_USER_CLAIM',
  sessionAudience: 'IDE_CLOUD_SESSION_AUDIENCE',
  sessionNodeSelector: 'IDE_CLOUD_SESSION_NODE_SELECTOR',
  sessionTolerations: 'IDE_CLOUD_SESSION_TOLERATIONS',
  sessionImagePullPolicy: 'IDE_CLOUD_SESSION_IMAGE_PULL_POLICY',
  missingImageHint: 'IDE_CLOUD_MISSING_IMAGE_HINT',
  configStoreMountPath: 'IDE_CLOUD_CONFIG_STORE_MOUNT_PATH',
  workspaceStorageSize: 'IDE_CLOUD_WORKSPACE_STORAGE_SIZE',
  workspaceStorageClass: 'IDE_CLOUD_WORKSPACE_STORAGE_CLASS',
  workspaceReclaimPolicy: 'IDE_CLOUD_WORKSPACE_RECLAIM_POLICY',
  standbyClaims: 'IDE_CLOUD_STANDBY_CLAIMS',
  claimBinderImage: 'IDE_CLOUD_CLAIM_BINDER_IMAGE',
  bridgeHealthAttempts: 'IDE_CLOUD_BRIDGE_HEALTH_ATTEMPTS',
  bridgeHealthIntervalMs: 'IDE_CLOUD_BRIDGE_HEALTH_INTERVAL_MS',
  bridgePostAttempts: 'IDE_CLOUD_BRIDGE_POST_ATTEMPTS',
  bridgeRequestTimeoutMs: 'IDE_CLOUD_BRIDGE_REQUEST_TIMEOUT_MS',
  monitorEnabled: 'IDE_CLOUD_MONITOR_ENABLE',
  activityTrackerEnabled: 'IDE_CLOUD_ACTIVITY_TRACKER_ENABLE',
  activityIntervalMs: 'IDE_CLOUD_ACTIVITY_INTERVAL_MS',
  maxSessionLifetimeMinutes: 'IDE_CLOUD_MAX_SESSION_LIFETIME_MINUTES',
  saveWorkTimeoutMs: 'IDE_CLOUD_SAVE_WORK_TIMEOUT_MS',
  lazyStartsPerSecond: 'IDE_CLOUD_LAZY_STARTS_PER_SECOND',
  lazyStartBurst: 'IDE_CLOUD_LAZY_START_BURST',
  rewatchIntervalMs: 'IDE_CLOUD_REWATCH_INTERVAL_MS',
  apiRequestTimeoutMs: 'IDE_CLOUD_API_REQUEST_TIMEOUT_MS',
  workers: 'IDE_CLOUD_OPERATOR_WORKERS',
  leaderElection: 'IDE_CLOUD_LEADER_ELECTION',
  leaseName: 'IDE_CLOUD_LEASE_NAME',
  identity: 'IDE_CLOUD_OPERATOR_IDENTITY',
  leaseDurationMs: 'IDE_CLOUD_LEASE_DURATION_MS',
  leaseRenewIntervalMs: 'IDE_CLOUD_LEASE_RENEW_INTERVAL_MS',
};

/**
 * Reads the configuration from environment variables (names in OPERATOR_ENV; IDE_CLOUD_NAMESPACE
 * defaults to `default`). Throws a clear message naming each invalid variable.
 */
export function loadOperatorConfig(env: NodeJS.ProcessEnv = process.env): OperatorConfig {
  const input: Record<string, string> = {};
  for (const [key, variable] of Object.entries(OPERATOR_ENV)) {
    const value = env[variable];
    if (value !== undefined && value !== '') input[key] = value;
  }
  input.namespace ??= 'default';
  return parseOperatorConfig(input as OperatorConfigInput);
}
