import type * as k8s from '@kubernetes/client-node';
import { createHmac, randomBytes } from 'node:crypto';
import { ANNOTATIONS, LABELS, OPERATOR_MANAGER } from '../model/api-group.js';
import {
  dataBridgeEnabled,
  dataBridgePort,
  workFolder,
  type AppDefinition,
  type Sidecar,
} from '../model/app-definition.js';
import { AUTH_PROXY_ADMISSION_TOKEN_KEY, DATA_BRIDGE_TOKEN_ENV, DATA_BRIDGE_TOKEN_KEY } from '../model/data-bridge.js';
import { dnsLabel, poolInstanceName, sessionPodAppLabel } from '../model/names.js';
import type { Session } from '../model/session.js';
import { authProxy, type AllowedUsers } from './auth-proxy.js';
import { sessionOrigin, type OperatorConfig } from './config.js';
import { containerSecurity, sessionPodSecurityContext } from './pod-security.js';
import { operatorEnvironment } from './session/env.js';

export const COMPONENT = {
  session: 'session',
  poolInstance: 'pool-instance',
  sidecar: 'sidecar',
  standbyClaim: 'standby-claim',
  claimBinder: 'claim-binder',
} as const;
/**
 * The shape of a warm instance this operator builds, bumped when older instances cannot serve a claim
 * (2: the data bridge takes a token; 3: the bridge names the user the authentication proxy admits;
 * 4: the work folder on a claim of the instance's own; 5: the restricted security context; 6: the
 * proxy's own admission writes its allowed users, the bridge no longer does).
 * A free instance of another shape is recreated like an outdated one.
 */
export const INSTANCE_TEMPLATE_ANNOTATION = 'ide-cloud.io/instance-template';
export const INSTANCE_TEMPLATE = '6';
/** Pod template annotation bumped to restart an instance's pods when it returns to the pool. */
export const RECYCLED_ANNOTATION = 'ide-cloud.io/recycled-at';
/**
 * On a warm instance's reservation: the generation of its Deployment when it was last made or reset
 * for the pool. A cache that shows an older Deployment (another watch stream, behind) holds the pod
 * before the reset, which no launch may claim.
 */
export const FREED_GENERATION_ANNOTATION = 'ide-cloud.io/freed-at-generation';
export const SERVICE_PORT = 80;

type Owner = { apiVersion: string; kind: string; metadata: { name: string; uid?: string } };

export function ownerReference(owner: Owner, controller = true): k8s.V1OwnerReference {
  return {
    apiVersion: owner.apiVersion ?? '',
    kind: owner.kind,
    name: owner.metadata.name,
    uid: owner.metadata.uid ?? '',
    controller,
    blockOwnerDeletion: controller,
  };
}

/** Name of warm pool instance `id` of an app definition (Deployment and Service). */
export { poolInstanceName };

/** `app=<sessionName>-<sessionUID>`, the pod label of a lazy session (cut with a hash to stay a label value). */
export function sessionPodApp(session: Pick<Session, 'metadata'>): string {
  return sessionPodAppLabel(session);
}

export function sidecarName(ownerName: string, sidecar: Pick<Sidecar, 'name'>): string {
  return dnsLabel([ownerName, sidecar.name]);
}

type Routed = Pick<Session, 'metadata' | 'spec'>;

/**
 * The key in a session's path (`/<session>/<key>/`): 128 bits derived from the session's secret (its
 * uid when it has none), so that no URL can be guessed from a session's name. In anonymous mode it is
 * the session's only credential: only this path is routed to the session's pod.
 */
export function sessionUrlKey(session: Routed): string {
  return createHmac('sha256', session.spec.sessionSecret ?? session.metadata.uid ?? '')
    .update(`url:${session.metadata.name}`)
    .digest('hex')
    .slice(0, 32);
}

export function routePath(session: Routed): string {
  return `/${session.metadata.name}/${sessionUrlKey(session)}/`;
}

/** The session a route's path (or its URL's path) belongs to: routePath's first segment. */
export function sessionOfRoutePath(path: string): string | undefined {
  return path.split('/')[1] || undefined;
}

export function sessionUrl(
  config: Pick<OperatorConfig, 'sessionScheme' | 'sessionHost' | 'sessionPort'>,
  session: Routed,
): string {
  return `${sessionOrigin(config)}${routePath(session)}`;
}

/** The placement the operator's configuration gives every session pod (nodeSelector, tolerations). */
export function sessionPodPlacement(
  config: Pick<OperatorConfig, 'sessionNodeSelector' | 'sessionTolerations'>,
): Pick<k8s.V1PodSpec, 'nodeSelector' | 'tolerations'> {
  return {
    ...(config.sessionNodeSelector && Object.keys(config.sessionNodeSelector).length > 0
      ? { nodeSelector: { ...config.sessionNodeSelector } }
      : {}),
    ...(config.sessionTolerations && config.sessionTolerations.length > 0
      ? { tolerations: config.sessionTolerations.map((t) => ({ ...t })) }
      : {}),
  };
}

/**
 * The work folder's volume: the claim, else an emptyDir as large as a claim would be (an ephemeral
 * session's work lives there; without a limit it could fill the node's disk).
 */
function workspaceVolume(
  claimName: string | undefined,
  config: Pick<OperatorConfig, 'workspaceStorageSize'>,
): k8s.V1Volume {
  return claimName
    ? { name: 'workspace', persistentVolumeClaim: { claimName } }
    : { name: 'workspace', emptyDir: { sizeLimit: config.workspaceStorageSize } };
}

/** The configured imagePullPolicy of session containers, when one is set. */
function pullPolicy(config: Pick<OperatorConfig, 'sessionImagePullPolicy'>): Pick<k8s.V1Container, 'imagePullPolicy'> {
  return config.sessionImagePullPolicy ? { imagePullPolicy: config.sessionImagePullPolicy } : {};
}

export interface PodInputs {
  appDefinition: AppDefinition;
  config: OperatorConfig;
  /** Value of the pod label `app`. */
  podApp: string;
  env: k8s.V1EnvVar[];
  envFrom?: k8s.V1EnvFromSource[];
  /** Workspace claim to mount; none: an emptyDir. */
  claimName?: string;
  configStore?: string;
  /** Who fills the authentication proxy's allowed-users file. */
  allowedUsers: AllowedUsers;
  /** Added to (and overriding) the pod labels every session pod carries: see sessionPodTemplate. */
  templateLabels?: Record<string, string>;
  templateAnnotations?: Record<string, string>;
}

/**
 * Pod template of a session pod: the IDE container named after the app definition plus the auth proxy.
 * Every pod carries `app.kubernetes.io/managed-by` and `app.kubernetes.io/component` (`session`, a
 * warm instance's template says `pool-instance`): the chart's NetworkPolicies select pods by them.
 */
export function sessionPodTemplate(input: PodInputs): k8s.V1PodTemplateSpec {
  const spec = input.appDefinition.spec;
  const volumes: k8s.V1Volume[] = [workspaceVolume(input.claimName, input.config)];
  const folder = workFolder(spec);
  const mounts: k8s.V1VolumeMount[] = [{ name: 'workspace', mountPath: folder }];
  if (input.configStore) {
    volumes.push({ name: 'config-store', configMap: { name: input.configStore, optional: true } });
    mounts.push({ name: 'config-store', mountPath: input.config.configStoreMountPath, readOnly: true });
  }
  const proxy = authProxy(input.config, spec.port, input.allowedUsers);
  volumes.push(...proxy.volumes);
  return {
    metadata: {
      labels: {
        app: input.podApp,
        [LABELS.managedBy]: OPERATOR_MANAGER,
        [LABELS.component]: COMPONENT.session,
        ...input.templateLabels,
      },
      ...(input.templateAnnotations ? { annotations: input.templateAnnotations } : {}),
    },
    spec: {
      automountServiceAccountToken: false,
      ...sessionPodPlacement(input.config),
      securityContext: sessionPodSecurityContext(),
      volumes,
      containers: [
        {
          name: spec.name,
          image: spec.image,
          ...pullPolicy(input.config),
          ...containerSecurity(spec.podSecurity),
          ports: [{ name: 'application', containerPort: spec.port }],
          // Ready once the IDE listens, not when its container starts (a clone may come first): a
          // URL is handed out only then, so the student never meets the proxy's 502.
          readinessProbe: proxy.ideReadiness,
          // The one work folder: the image's agent clones into it and its IDE opens it.
          env: [{ name: 'WORKSPACE_DIR', value: folder }, ...input.env],
          ...(input.envFrom && input.envFrom.length > 0 ? { envFrom: input.envFrom } : {}),
          resources: {
            requests: { memory: spec.requestsMemory, cpu: spec.requestsCpu },
            limits: { memory: spec.limitsMemory, cpu: spec.limitsCpu },
          },
          volumeMounts: mounts,
        },
        proxy.container,
      ],
    },
  };
}

/** Name of the Secret that holds a lazy session's values (owned by the Session, goes with it). */
export function sessionEnvSecretName(sessionName: string): string {
  return `${sessionName}-env`;
}

/** Key of the authentication proxy's allowed users in the session's Secret; a dot keeps it apart from env names. */
const ALLOWED_USERS_KEY = '.auth-proxy-users';
/** Key of the data bridge's token in the session's Secret; a dot keeps it apart from env names. */
export const SESSION_BRIDGE_TOKEN_KEY = '.data-bridge-token';

/** The values of a lazy session's IDE container: spec.envVars, then what the operator adds. */
function lazyValues(session: Session): Record<string, string> {
  return { ...session.spec.envVars, ...operatorEnvironment(session) };
}

/**
 * The Secret of a lazy session: its values (spec.envVars, the activity token), so that neither the
 * Deployment nor the Pod carries any of them in plain text (both are readable with the built-in `view`
 * role; Secrets are not), the user its authentication proxy admits and, when its IDE runs the data
 * bridge, the bridge's token (the session's own, as a warm instance has its own). Owned by the Session,
 * marked as the operator's (so no launch can name it as an env source).
 */
export function sessionEnvSecret(session: Session, namespace: string, bridgeToken?: string): k8s.V1Secret {
  const data: Record<string, string> = {};
  for (const [key, value] of Object.entries(lazyValues(session))) data[key] = Buffer.from(value).toString('base64');
  data[ALLOWED_USERS_KEY] = Buffer.from(`${session.spec.user}\n`).toString('base64');
  if (bridgeToken) data[SESSION_BRIDGE_TOKEN_KEY] = Buffer.from(bridgeToken).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: sessionEnvSecretName(session.metadata.name),
      namespace,
      labels: { [LABELS.managedBy]: OPERATOR_MANAGER, ...sessionLabels(session) },
      ownerReferences: [ownerReference(session as Owner)],
    },
    data,
  };
}

/**
 * Env of a lazy session's IDE container: each value a reference to the session's Secret, none in plain
 * text. With the data bridge, the bridge runs as on a warm instance (its token by reference too), but
 * the session image reads the values from the environment: nothing is injected into a lazy session.
 */
export function lazyEnv(session: Session, appDefinition: AppDefinition): k8s.V1EnvVar[] {
  const secret = sessionEnvSecretName(session.metadata.name);
  const values = Object.keys(lazyValues(session)).map((name) => ({
    name,
    valueFrom: { secretKeyRef: { name: secret, key: name } },
  }));
  if (!dataBridgeEnabled(appDefinition.spec)) return values;
  return [...values, ...bridgeEnv(appDefinition, { name: secret, key: SESSION_BRIDGE_TOKEN_KEY })];
}

/** A lazy session's proxy admits the user named in the session's Secret. */
export function lazyAllowedUsers(session: Session): AllowedUsers {
  return { secret: sessionEnvSecretName(session.metadata.name), key: ALLOWED_USERS_KEY };
}

export function lazyEnvFrom(session: Session): k8s.V1EnvFromSource[] {
  return [
    ...(session.spec.envVarsFromConfigMaps ?? []).map((name) => ({ configMapRef: { name } })),
    ...(session.spec.envVarsFromSecrets ?? []).map((name) => ({ secretRef: { name } })),
  ];
}

/** Env that runs the data bridge in the IDE container, its token (where the operator keeps it) by reference. */
function bridgeEnv(appDefinition: AppDefinition, token: k8s.V1SecretKeySelector): k8s.V1EnvVar[] {
  return [
    { name: 'DATA_BRIDGE_ENABLED', value: 'true' },
    { name: 'DATA_BRIDGE_PORT', value: String(dataBridgePort(appDefinition.spec)) },
    // The token the operator authenticates to the bridge with: a reference, never the value.
    { name: DATA_BRIDGE_TOKEN_ENV, valueFrom: { secretKeyRef: token } },
  ];
}

/** Env of a generic warm instance: the data bridge is on and the session image reads values from it. */
export function poolEnv(appDefinition: AppDefinition, id: number): k8s.V1EnvVar[] {
  return [
    ...bridgeEnv(appDefinition, {
      name: bridgeTokenSecretName(poolInstanceName(appDefinition.metadata.name, id)),
      key: DATA_BRIDGE_TOKEN_KEY,
    }),
    { name: 'SESSION_ENV_STRATEGY', value: 'data-bridge' },
  ];
}

/** Name of the Secret holding a warm instance's data-bridge token. */
export function bridgeTokenSecretName(instanceName: string): string {
  return `${instanceName}-bridge`;
}

/** A fresh data-bridge token: 32 random bytes, base64url (43 characters). */
export function newBridgeToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The Secret of warm instance `id`'s tokens, owned by the app definition like the instance. Only the
 * operator (which sends them) and the instance's pod know them: the data bridge's (the IDE container,
 * by reference) and the proxy admission's (mounted into the proxy container only, so that the student's
 * code, which can read the bridge's, cannot name who the proxy admits).
 */
export function bridgeTokenSecret(
  appDefinition: AppDefinition,
  id: number,
  namespace: string,
  token: string,
  admissionToken: string = newBridgeToken(),
): k8s.V1Secret {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: bridgeTokenSecretName(poolInstanceName(appDefinition.metadata.name, id)),
      namespace,
      labels: { [LABELS.managedBy]: OPERATOR_MANAGER, ...poolInstanceLabels(appDefinition, id) },
      ownerReferences: [ownerReference(appDefinition as Owner)],
    },
    data: {
      [DATA_BRIDGE_TOKEN_KEY]: Buffer.from(token).toString('base64'),
      [AUTH_PROXY_ADMISSION_TOKEN_KEY]: Buffer.from(admissionToken).toString('base64'),
    },
  };
}

/**
 * The Deployment API's "no progress deadline" (the largest int32): the deployment controller then
 * keeps no Progressing condition and never requeues a Deployment to check a deadline. The operator
 * judges a start itself (session/start-failure.ts), so the condition only made every Deployment's
 * status, and each write and watch event of it, larger.
 */
export const NO_PROGRESS_DEADLINE = 2_147_483_647;

/** What a workload of the operator's (a Deployment, a lazy session's pod) is made of. */
interface WorkloadInput {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  annotations?: Record<string, string>;
  owners: k8s.V1OwnerReference[];
  template: k8s.V1PodTemplateSpec;
}

/** A workload's metadata, and its one replica of `template`, selected by the template's `app` label. */
function workloadParts(input: WorkloadInput) {
  const app = input.template.metadata?.labels?.app ?? input.name;
  return {
    metadata: {
      name: input.name,
      namespace: input.namespace,
      labels: { [LABELS.managedBy]: OPERATOR_MANAGER, ...input.labels },
      ...(input.annotations ? { annotations: input.annotations } : {}),
      ownerReferences: input.owners,
    },
    spec: { replicas: 1, selector: { matchLabels: { app } }, template: input.template },
  };
}

export function deployment(input: WorkloadInput): k8s.V1Deployment {
  const { metadata, spec } = workloadParts(input);
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata,
    spec: { ...spec, strategy: { type: 'Recreate' }, progressDeadlineSeconds: NO_PROGRESS_DEADLINE },
  };
}

/**
 * A lazy session's own IDE pod, made by the operator itself: nothing ever changes it (a running
 * session is not rebuilt from a newer app definition), so a controller in between (a ReplicaSet, a
 * Deployment) would only add its object, its status writes and its passes to every lazy launch
 * (about a quarter of the API writes of one). The operator makes it again when it is lost
 * (session/steps/workload.ts). Its name is generated from the session's, so a new pod need not wait
 * for a lost one to be gone; the session's `app` label, which carries its uid, finds it.
 */
export function sessionPod(input: WorkloadInput): k8s.V1Pod {
  const { metadata } = workloadParts(input);
  const { name: _name, ...rest } = metadata;
  void _name;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      ...rest,
      generateName: `${input.name}-`,
      labels: { ...metadata.labels, ...input.template.metadata?.labels },
      annotations: { ...input.template.metadata?.annotations, ...input.annotations },
    },
    spec: input.template.spec,
  };
}

export function service(input: {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  owners: k8s.V1OwnerReference[];
  podApp: string;
  targetPort: number;
}): k8s.V1Service {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: input.name,
      namespace: input.namespace,
      labels: { [LABELS.managedBy]: OPERATOR_MANAGER, ...input.labels },
      ownerReferences: input.owners,
    },
    spec: {
      selector: { app: input.podApp },
      ports: [{ name: 'http', port: SERVICE_PORT, targetPort: input.targetPort as unknown as k8s.IntOrString }],
    },
  };
}

/** Deployment and Service of one app definition sidecar (created before the IDE Deployment). */
export function sidecarObjects(input: {
  sidecar: Sidecar;
  ownerName: string;
  namespace: string;
  labels: Record<string, string>;
  owners: k8s.V1OwnerReference[];
  claimName?: string;
  /** The app definition's work folder, where a workspace-mounting sidecar mounts it too. */
  workFolder: string;
  config: OperatorConfig;
  templateAnnotations?: Record<string, string>;
}): { deployment: k8s.V1Deployment; service?: k8s.V1Service } {
  const name = sidecarName(input.ownerName, input.sidecar);
  const sc = input.sidecar;
  const mount = sc.mountWorkspace;
  const template: k8s.V1PodTemplateSpec = {
    metadata: {
      // Selected by the chart's NetworkPolicies. Not the owner's `pool-instance` or `session` label:
      // pod lookups of an instance or a session go through those and must find the IDE pod only.
      labels: {
        app: name,
        [LABELS.managedBy]: OPERATOR_MANAGER,
        [LABELS.component]: COMPONENT.sidecar,
        ...(input.labels[LABELS.appDefinition] ? { [LABELS.appDefinition]: input.labels[LABELS.appDefinition] } : {}),
      },
      ...(input.templateAnnotations ? { annotations: input.templateAnnotations } : {}),
    },
    spec: {
      automountServiceAccountToken: false,
      ...sessionPodPlacement(input.config),
      securityContext: sessionPodSecurityContext(),
      ...(mount ? { volumes: [workspaceVolume(input.claimName, input.config)] } : {}),
      containers: [
        {
          name: sc.name,
          image: sc.image,
          ...pullPolicy(input.config),
          ...containerSecurity(sc.podSecurity),
          ...(sc.port ? { ports: [{ name: 'http', containerPort: sc.port }] } : {}),
          env: Object.entries(sc.env ?? {}).map(([n, value]) => ({ name: n, value })),
          resources: {
            requests: {
              ...(sc.requestsMemory ? { memory: sc.requestsMemory } : {}),
              ...(sc.requestsCpu ? { cpu: sc.requestsCpu } : {}),
            },
            limits: {
              ...(sc.limitsMemory ? { memory: sc.limitsMemory } : {}),
              ...(sc.limitsCpu ? { cpu: sc.limitsCpu } : {}),
            },
          },
          ...(mount ? { volumeMounts: [{ name: 'workspace', mountPath: input.workFolder }] } : {}),
        },
      ],
    },
  };
  const labels = { ...input.labels, [LABELS.component]: COMPONENT.sidecar };
  return {
    deployment: deployment({ name, namespace: input.namespace, labels, owners: input.owners, template }),
    ...(sc.port
      ? {
          service: service({
            name,
            namespace: input.namespace,
            labels,
            owners: input.owners,
            podApp: name,
            targetPort: sc.port,
          }),
        }
      : {}),
  };
}

/** Labels every object of a session carries. */
export function sessionLabels(session: Session): Record<string, string> {
  return {
    [LABELS.session]: session.metadata.name,
    [LABELS.appDefinition]: dnsLabel([session.spec.appDefinition]),
    [LABELS.component]: COMPONENT.session,
  };
}

export function generationOf(appDefinition: AppDefinition): string {
  return String(appDefinition.metadata.generation ?? 0);
}

export function poolInstanceLabels(appDefinition: AppDefinition, id: number): Record<string, string> {
  return {
    [LABELS.appDefinition]: dnsLabel([appDefinition.metadata.name]),
    [LABELS.component]: COMPONENT.poolInstance,
    [LABELS.poolInstance]: poolInstanceName(appDefinition.metadata.name, id),
    [LABELS.instanceId]: String(id),
  };
}

/**
 * A claim that holds a student's work folder: a workspace's own, or a warm instance's, which a new
 * workspace takes over when its first launch claims the instance (pool/claims.ts).
 */
export function workClaim(input: {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  owners: k8s.V1OwnerReference[];
  config: Pick<OperatorConfig, 'workspaceStorageSize' | 'workspaceStorageClass'>;
}): k8s.V1PersistentVolumeClaim {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: input.name,
      namespace: input.namespace,
      labels: { [LABELS.managedBy]: OPERATOR_MANAGER, ...input.labels },
      ...(input.owners.length > 0 ? { ownerReferences: input.owners } : {}),
    },
    spec: {
      accessModes: ['ReadWriteOnce'],
      resources: { requests: { storage: input.config.workspaceStorageSize } },
      ...(input.config.workspaceStorageClass ? { storageClassName: input.config.workspaceStorageClass } : {}),
    },
  };
}

/**
 * Name of a warm instance's next claim: a fresh one each time the instance is made or returns to the
 * pool (its last claim went to a workspace, or goes with the last user's files).
 */
export function poolClaimName(instanceName: string, suffix: string = randomBytes(4).toString('hex')): string {
  return dnsLabel([instanceName, 'work', suffix]);
}

/** Name of a new standby claim (standby/reconciler.ts). */
export function standbyClaimName(suffix: string = randomBytes(4).toString('hex')): string {
  return dnsLabel(['ide-cloud-standby', suffix]);
}

/** Name of the pod that binds standby claim `claimName`. */
export function claimBinderName(claimName: string): string {
  return dnsLabel([claimName, 'binder']);
}

/**
 * The pod that makes a standby claim bind where binding waits for a first consumer: it mounts the
 * claim and does nothing else, placed where session pods go (a claim bound on one node serves pods
 * there), restricted in every way, gone with its claim (owner reference) or once the claim is bound.
 */
export function claimBinderPod(input: {
  claim: Pick<k8s.V1PersistentVolumeClaim, 'metadata'>;
  namespace: string;
  config: Pick<OperatorConfig, 'claimBinderImage' | 'sessionNodeSelector' | 'sessionTolerations'>;
}): k8s.V1Pod {
  const claimName = input.claim.metadata?.name ?? '';
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: claimBinderName(claimName),
      namespace: input.namespace,
      labels: { [LABELS.managedBy]: OPERATOR_MANAGER, [LABELS.component]: COMPONENT.claimBinder },
      ownerReferences: [
        ownerReference(
          {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            metadata: { name: claimName, uid: input.claim.metadata?.uid },
          },
          false,
        ),
      ],
    },
    spec: {
      ...sessionPodPlacement(input.config),
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      terminationGracePeriodSeconds: 0,
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 65535,
        runAsGroup: 65535,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: 'bind',
          image: input.config.claimBinderImage,
          resources: { requests: { cpu: '1m', memory: '4Mi' }, limits: { cpu: '10m', memory: '16Mi' } },
          securityContext: {
            allowPrivilegeEscalation: false,
            readOnlyRootFilesystem: true,
            capabilities: { drop: ['ALL'] },
          },
          volumeMounts: [{ name: 'claim', mountPath: '/claim', readOnly: true }],
        },
      ],
      volumes: [{ name: 'claim', persistentVolumeClaim: { claimName, readOnly: true } }],
    },
  };
}

/** The claim a warm instance's pod template mounts at the work folder. */
export function instanceClaimName(d: k8s.V1Deployment): string | undefined {
  return d.spec?.template?.spec?.volumes?.find((v) => v.name === 'workspace')?.persistentVolumeClaim?.claimName;
}

/** The free (unreserved) pod template of a warm instance, its work folder on `claimName`. */
export function poolInstanceTemplate(
  appDefinition: AppDefinition,
  id: number,
  config: OperatorConfig,
  claimName: string,
  recycledAt?: string,
): k8s.V1PodTemplateSpec {
  return sessionPodTemplate({
    appDefinition,
    config,
    claimName,
    podApp: poolInstanceName(appDefinition.metadata.name, id),
    env: poolEnv(appDefinition, id),
    allowedUsers: {
      admission: { tokenSecret: bridgeTokenSecretName(poolInstanceName(appDefinition.metadata.name, id)) },
    },
    templateLabels: {
      [LABELS.poolInstance]: poolInstanceName(appDefinition.metadata.name, id),
      [LABELS.component]: COMPONENT.poolInstance,
    },
    templateAnnotations: {
      [ANNOTATIONS.appDefinitionGeneration]: generationOf(appDefinition),
      ...(recycledAt ? { [RECYCLED_ANNOTATION]: recycledAt } : {}),
    },
  });
}

export function poolInstanceDeployment(
  appDefinition: AppDefinition,
  id: number,
  namespace: string,
  config: OperatorConfig,
  claimName: string,
): k8s.V1Deployment {
  return deployment({
    name: poolInstanceName(appDefinition.metadata.name, id),
    namespace,
    labels: poolInstanceLabels(appDefinition, id),
    annotations: {
      [ANNOTATIONS.appDefinitionGeneration]: generationOf(appDefinition),
      [INSTANCE_TEMPLATE_ANNOTATION]: INSTANCE_TEMPLATE,
    },
    owners: [ownerReference(appDefinition as Owner)],
    template: poolInstanceTemplate(appDefinition, id, config, claimName),
  });
}

/**
 * The reservation of a warm instance: a Lease named after it, owned by its Deployment (it goes with
 * it). Free, it holds nobody; a claim writes the session into it (pool/instances.ts), so a launch
 * writes this small object, not the Deployment, and wakes no deployment controller.
 */
export function instanceReservation(
  appDefinition: AppDefinition,
  id: number,
  namespace: string,
  instance: Pick<k8s.V1ObjectMeta, 'name' | 'uid'>,
): k8s.V1Lease {
  return {
    apiVersion: 'coordination.k8s.io/v1',
    kind: 'Lease',
    metadata: {
      name: poolInstanceName(appDefinition.metadata.name, id),
      namespace,
      labels: { [LABELS.managedBy]: OPERATOR_MANAGER, ...poolInstanceLabels(appDefinition, id) },
      ownerReferences: [
        ownerReference(
          { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: instance.name ?? '', uid: instance.uid } },
          false,
        ),
      ],
    },
    spec: {},
  };
}
