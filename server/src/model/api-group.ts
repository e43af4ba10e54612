/** The API group and version of IDE Cloud's custom resources, and the metadata keys they carry. */
export const GROUP = 'ide.cloud';
export const VERSION = 'v1beta10';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** The `app.kubernetes.io/managed-by` of every object the operator makes. */
export const OPERATOR_MANAGER = 'ide-cloud-operator';

/** One field manager for every server-side apply of IDE Cloud. */
export const FIELD_MANAGER = 'ide-cloud';

/**
 * The Session's finalizer: its path in the shared Ingress (which it does not own) goes before it does.
 * The service sets it when it creates a Session, so the operator's launch makes no write for it; the
 * operator adds it to a Session made without it (kubectl) before anything of the session exists.
 */
export const SESSION_FINALIZER = 'ide-cloud.io/session-route';

export const ANNOTATIONS = {
  startStrategy: 'ide-cloud.io/session-start-strategy',
  instanceId: 'ide-cloud.io/instance-id',
  appDefinitionGeneration: 'ide-cloud.io/app-definition-generation',
  stopReason: 'ide-cloud.io/stop-reason',
  /** When the IDE was warned of the coming stop (RFC 3339); the stop waits for the window after it. */
  stopWarning: 'ide-cloud.io/stop-warning',
  /** Where the student's work went before the stop: the branch, `nothing-to-save` or `failed`. */
  workSaved: 'ide-cloud.io/work-saved',
  /** On a Session the service created: what its launch asked for (service/launch-digest.ts), and the service's mark. */
  launchDigest: 'ide-cloud.io/launch-digest',
  /**
   * On a Workspace a launch created (`"true"`): it holds no work yet, so the warm instance its first
   * session claims may bring its claim along (model/workspace.ts, takesWarmClaim).
   */
  createdByLaunch: 'ide-cloud.io/created-by-launch',
  /**
   * On a Session whose launch created its workspace (`"true"`): the workspace's first session, so
   * while it has not served, neither has the workspace (`neverServedWorkspace`, model/session.ts).
   */
  createdWorkspace: 'ide-cloud.io/created-workspace',
  /**
   * On an ephemeral Session the service created (`"true"`) until a launch answers its URL: one that
   * serves with it still set was handed to nobody (its launch was killed), so the user's next launch
   * at a limit may adopt or replace it (`urlHandedOut`, model/session.ts).
   */
  unanswered: 'ide-cloud.io/unanswered',
} as const;

export const LABELS = {
  appDefinition: 'ide-cloud.io/app-definition',
  session: 'ide-cloud.io/session',
  workspace: 'ide-cloud.io/workspace',
  /** On a standby claim a workspace took: which workspace of that name (a later one of the name is another). */
  workspaceUid: 'ide-cloud.io/workspace-uid',
  user: 'ide-cloud.io/user',
  instanceId: 'ide-cloud.io/instance-id',
  poolInstance: 'ide-cloud.io/pool-instance',
  component: 'app.kubernetes.io/component',
  managedBy: 'app.kubernetes.io/managed-by',
} as const;
