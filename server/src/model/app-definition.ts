import { z } from 'zod';
import { ConditionsSchema } from './conditions.js';
import { QuantitySchema } from './quantity.js';
import { ObjectMetaSchema } from './object-meta.js';
import { DEFAULT_LAUNCH_TIMEOUT_MINUTES } from './requests.js';

export const DEFAULT_DATA_BRIDGE_PORT = 16281;
export const DEFAULT_MAX_INSTANCES = 1000;
/**
 * Start deadline of a session when its app definition sets none: the service's default launch
 * timeout, so a session the service has given up on does not linger `Starting` on the operator's
 * side either.
 */
export const DEFAULT_START_DEADLINE_SECONDS = DEFAULT_LAUNCH_TIMEOUT_MINUTES * 60;
/** How long before an idle or lifetime stop the IDE warns the student when the app definition says nothing. */
export const DEFAULT_STOP_WARNING_SECONDS = 300;
/**
 * The work folder of the session images (their `WORKSPACE_DIR`): where the agent clones, where the IDE
 * opens and where a workspace's claim is mounted, unless an app definition's `mountPath` names another.
 */
export const DEFAULT_WORK_FOLDER = '/home/ide/workspace';

/**
 * The Pod Security Standard a session container is made for (the IDE's or a sidecar's). restricted,
 * the default: non-root, no privilege escalation, no capabilities. baseline: the explicit opt-out of an
 * image that must start as root, needs the runtime's default capabilities or names its user instead of
 * a number; a namespace that enforces restricted then refuses the pod.
 */
export const PodSecuritySchema = z
  .enum(['restricted', 'baseline'])
  .describe(
    'Pod Security level of the container: restricted (unset: non-root, no privilege escalation, no capabilities) or baseline (an image that must start as root; the explicit opt-out)',
  );
export type PodSecurity = z.infer<typeof PodSecuritySchema>;

export const SidecarSchema = z
  .object({
    name: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/)
      .max(40),
    image: z.string().min(1),
    port: z.number().int().min(1).max(65535).optional(),
    mountWorkspace: z.boolean().default(false).describe('mount the workspace claim into the sidecar'),
    env: z.record(z.string(), z.string()).optional(),
    requestsMemory: QuantitySchema.optional(),
    requestsCpu: QuantitySchema.optional(),
    limitsMemory: QuantitySchema.optional(),
    limitsCpu: QuantitySchema.optional(),
    podSecurity: PodSecuritySchema.optional(),
  })
  .strict();
export type Sidecar = z.infer<typeof SidecarSchema>;

export const MonitorSchema = z
  .object({
    port: z.number().int().min(1).max(65535).optional().describe('port of the IDE activity endpoint'),
    activityTracker: z
      .object({
        timeoutAfter: z.number().int().min(1).optional().describe('minutes without activity before the session stops'),
        notifyAfter: z.number().int().min(1).optional().describe('minutes without activity before the user is warned'),
      })
      .strict()
      .optional(),
  })
  .strict();

export const AppDefinitionOptionsSchema = z
  .record(z.string(), z.string())
  .describe('per-definition configuration: dataBridgeEnabled ("true"), dataBridgePort (default 16281)');

/** Spec of an AppDefinition: a launchable session type. Field names follow the service spec's table. */
export const AppDefinitionSpecSchema = z
  .object({
    name: z.string().min(1).describe('identifier used in API calls and the landing page configuration'),
    image: z.string().min(1).describe('container image of the IDE session'),
    requestsMemory: QuantitySchema.default('500M'),
    requestsCpu: QuantitySchema.default('200m'),
    limitsMemory: QuantitySchema.default('2400M'),
    limitsCpu: QuantitySchema.default('2'),
    minInstances: z.number().int().min(0).default(0).describe('size of the warm pool'),
    maxInstances: z
      .number()
      .int()
      .min(0)
      .nullable()
      .default(DEFAULT_MAX_INSTANCES)
      .describe('ceiling of concurrent sessions, eager plus lazy; null removes the bound'),
    port: z.number().int().min(1).max(65535).describe('port of the IDE in the container'),
    mountPath: z
      .string()
      .max(255)
      // Plain names, none starting with a dot (so no . or .. part): the same rule in the CRD's pattern.
      .regex(/^(\/[A-Za-z0-9_-][A-Za-z0-9._-]*)+$/, 'an absolute path of plain names, none starting with a dot')
      .optional()
      .describe(
        `the work folder: where the workspace's claim is mounted, the agent clones and the IDE opens (given to the IDE container as WORKSPACE_DIR); unset: ${DEFAULT_WORK_FOLDER}, the session images' own`,
      ),
    ingressname: z.string().min(1).describe('name of the shared route the session routes are added to'),
    options: AppDefinitionOptionsSchema.optional(),
    // Fractions of a minute are allowed, as for a launch's timeout: a course's short exercise.
    timeout: z
      .number()
      .min(0)
      .optional()
      .describe('minutes of inactivity before an idle session stops (fractions allowed); 0 or unset: never'),
    maxLifetimeMinutes: z
      .number()
      .min(0)
      .optional()
      .describe(
        "minutes from a session's creation after which it stops, active or not (fractions allowed); unset: the operator's IDE_CLOUD_MAX_SESSION_LIFETIME_MINUTES (0: none)",
      ),
    startDeadlineSeconds: z
      .number()
      .int()
      .min(1)
      .max(86_400)
      .optional()
      .describe(
        "seconds from a session's creation within which its IDE must serve, else it fails (StartDeadlineExceeded); unset: 180, the service's default launch timeout",
      ),
    stopWarningSeconds: z
      .number()
      .int()
      .min(0)
      .max(86_400)
      .optional()
      .describe(
        'seconds before an idle or lifetime stop that the IDE warns the student through the data bridge, and activity in them keeps an idle session; 0: no warning; unset: the lead of monitor.activityTracker.notifyAfter for idle stops, else 300',
      ),
    saveWorkOnStop: z
      .boolean()
      .optional()
      .describe(
        "before an idle or lifetime stop, commit the student's uncommitted work and push it to a new branch of their repository; unset: false",
      ),
    podSecurity: PodSecuritySchema.optional(),
    sidecars: z.array(SidecarSchema).optional(),
    monitor: MonitorSchema.optional(),
  })
  .strict()
  .refine((s) => s.maxInstances === null || s.minInstances <= s.maxInstances, {
    message: 'minInstances must be <= maxInstances',
    path: ['minInstances'],
  })
  .meta({
    // The same rule as the refine above, enforced by the API server for kubectl and Helm writes.
    'x-kubernetes-validations': [
      {
        rule: '!has(self.maxInstances) || !has(self.minInstances) || self.minInstances <= self.maxInstances',
        message: 'minInstances must be <= maxInstances',
      },
    ],
  });
export type AppDefinitionSpec = z.output<typeof AppDefinitionSpecSchema>;
export type AppDefinitionSpecInput = z.input<typeof AppDefinitionSpecSchema>;

/**
 * The warm pool's counts. What the sessions hold is theirs to tell (`countReservedInstances`): a launch
 * reserves an instance without changing these, so it costs no write of the AppDefinition.
 */
export const PoolStatusSchema = z
  .object({
    desired: z.number().int().min(0),
    ready: z.number().int().min(0).describe('instances of the pool that are ready, free or reserved'),
  })
  .strict();
export type PoolStatus = z.infer<typeof PoolStatusSchema>;

export const AppDefinitionStatusSchema = z
  .object({
    observedGeneration: z.number().int().optional(),
    pool: PoolStatusSchema.optional(),
    conditions: ConditionsSchema.optional(),
  })
  .strict();
export type AppDefinitionStatus = z.infer<typeof AppDefinitionStatusSchema>;

/** Condition types of an AppDefinition. */
export const AppDefinitionCondition = {
  /** The warm pool has its free instances ready. */
  ready: 'Ready',
} as const;

/** Reasons of an AppDefinition's Ready condition. */
export const AppDefinitionReadyReason = {
  pending: 'Pending',
  poolChanging: 'PoolChanging',
  poolReady: 'PoolReady',
  instancesStarting: 'InstancesStarting',
} as const;

export const AppDefinitionSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMetaSchema,
  spec: AppDefinitionSpecSchema,
  status: AppDefinitionStatusSchema.optional(),
});
export type AppDefinition = z.output<typeof AppDefinitionSchema>;

export function dataBridgeEnabled(spec: Pick<AppDefinitionSpec, 'options'>): boolean {
  return spec.options?.dataBridgeEnabled === 'true';
}

/** Size of the warm pool the operator keeps: none with eager start off or without the data bridge. */
export function effectiveMinInstances(
  config: { eagerStart: boolean },
  appDefinition: { spec: AppDefinitionSpec },
): number {
  return config.eagerStart && dataBridgeEnabled(appDefinition.spec) ? appDefinition.spec.minInstances : 0;
}

export function dataBridgePort(spec: Pick<AppDefinitionSpec, 'options'>): number {
  const port = Number(spec.options?.dataBridgePort ?? DEFAULT_DATA_BRIDGE_PORT);
  return Number.isInteger(port) && port > 0 && port < 65536 ? port : DEFAULT_DATA_BRIDGE_PORT;
}

/** Seconds from a session's creation within which it must serve (`startDeadlineSeconds`, else the default). */
export function startDeadlineSeconds(spec: Pick<AppDefinitionSpec, 'startDeadlineSeconds'>): number {
  return spec.startDeadlineSeconds ?? DEFAULT_START_DEADLINE_SECONDS;
}

/**
 * Seconds before a stop of `kind` that the student is warned: `stopWarningSeconds`; for idle stops
 * without it, the lead monitor.activityTracker.notifyAfter gives (timeout minus notifyAfter); else the
 * default. Never longer than the timeout or lifetime it warns of (`limitMinutes`).
 */
export function stopWarningSeconds(
  spec: Pick<AppDefinitionSpec, 'stopWarningSeconds' | 'monitor'>,
  kind: 'Idle' | 'MaxLifetime',
  limitMinutes: number,
): number {
  const notifyAfter = spec.monitor?.activityTracker?.notifyAfter;
  const lead =
    spec.stopWarningSeconds ??
    (kind === 'Idle' && notifyAfter !== undefined && notifyAfter < limitMinutes
      ? (limitMinutes - notifyAfter) * 60
      : DEFAULT_STOP_WARNING_SECONDS);
  return Math.min(lead, limitMinutes * 60);
}

/** Whether the student's work is saved to a branch of their repository before an idle or lifetime stop. */
export function saveWorkOnStop(spec: Pick<AppDefinitionSpec, 'saveWorkOnStop'>): boolean {
  return spec.saveWorkOnStop === true;
}

/** The session's work folder: `mountPath`, else the session images' default. */
export function workFolder(spec: Pick<AppDefinitionSpec, 'mountPath'>): string {
  return spec.mountPath ?? DEFAULT_WORK_FOLDER;
}

export function hasWorkspaceMountingSidecars(spec: Pick<AppDefinitionSpec, 'sidecars'>): boolean {
  return (spec.sidecars ?? []).some((s) => s.mountWorkspace);
}
