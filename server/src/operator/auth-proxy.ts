/**
 * The authentication proxy beside every session's IDE: oauth2-proxy from images/auth-proxy, whose
 * configuration file (chosen here by argument) takes its values from the environment set here.
 *
 * With an identity provider, the proxy admits only the users listed in its allowed-users file, on a
 * volume of the proxy container alone (nothing the student runs in the IDE container reaches it): a
 * lazy session's file comes from the session's Secret; a warm instance's starts empty (nobody passes)
 * and the proxy's admission (images/auth-proxy/admission) writes the session's user into it when the
 * operator names them at the claim, with a per-instance token mounted into the proxy container only;
 * the proxy reloads the file without restarting. Every proxy of the installation
 * shares one cookie key and the sign-in callback at `/oauth2/callback` of the session host (the
 * chart's sign-in proxy), so one sign-in serves all the sessions of a user.
 *
 * In anonymous mode there is no identity to check: the session URL's key is the credential.
 */
import type * as k8s from '@kubernetes/client-node';
import { AUTH_PROXY_ADMISSION_TOKEN_KEY } from '../model/data-bridge.js';
import { sessionOrigin, type OperatorConfig } from './config.js';
import { containerSecurity } from './pod-security.js';

export const AUTH_PROXY_CONTAINER = 'auth-proxy';
/** Where the allowed-users file is, in the proxy container only. */
export const AUTH_PROXY_USERS_DIR = '/var/run/ide-cloud/auth-proxy';
export const AUTH_PROXY_USERS_FILE = `${AUTH_PROXY_USERS_DIR}/users`;
const USERS_VOLUME = 'auth-proxy-users';
/** Where the admission's token is, in the proxy container only. */
export const AUTH_PROXY_ADMISSION_DIR = '/var/run/ide-cloud/auth-proxy-admission';
const ADMISSION_VOLUME = 'auth-proxy-admission';
/** Name of the admission's port in the proxy container: the operator finds the port by it. */
export const AUTH_PROXY_ADMISSION_PORT_NAME = 'admission';
/** Keys of the installation's Secret (config.authProxySecretName). */
export const AUTH_PROXY_SECRET_KEYS = { cookieSecret: 'cookie-secret', clientSecret: 'client-secret' } as const;
const CONFIG_DIR = '/etc/ide-cloud/auth-proxy';

/**
 * Who fills the allowed-users file: the proxy's admission at the claim (its token in `tokenSecret`,
 * key AUTH_PROXY_ADMISSION_TOKEN_KEY), or a key of a Secret.
 */
export type AllowedUsers = { admission: { tokenSecret: string } } | { secret: string; key: string };

type ProxyConfig = Pick<
  OperatorConfig,
  | 'authProxyImage'
  | 'authProxyPort'
  | 'authProxyAdmissionPort'
  | 'authProxyReadyPort'
  | 'authProxySecretName'
  | 'sessionIssuer'
  | 'sessionClientId'
  | 'sessionUserClaim'
  | 'sessionAudience'
  | 'sessionScheme'
  | 'sessionHost'
  | 'sessionPort'
>;

export function checksIdentity(config: Pick<OperatorConfig, 'sessionIssuer'>): boolean {
  return config.sessionIssuer !== undefined;
}

/** The proxy's arguments: none of them secret (the secrets come by reference, in the environment). */
export function authProxyArgs(config: ProxyConfig): string[] {
  const common = [`--cookie-secure=${config.sessionScheme === 'https'}`, '--reverse-proxy=true'];
  if (!checksIdentity(config)) {
    return [`--alpha-config=${CONFIG_DIR}/url-key.yaml`, '--email-domain=*', '--skip-auth-route=.*', ...common];
  }
  return [
    `--alpha-config=${CONFIG_DIR}/identity-provider.yaml`,
    `--authenticated-emails-file=${AUTH_PROXY_USERS_FILE}`,
    `--redirect-url=${sessionOrigin(config)}/oauth2/callback`,
    '--cookie-name=_ide_cloud_session',
    '--cookie-expire=24h',
    '--skip-provider-button=true',
    // API clients (and tests) may present the provider's token instead of signing in.
    '--skip-jwt-bearer-tokens=true',
    ...common,
  ];
}

/**
 * The proxy container's environment: the values its configuration file names and the address of the
 * readiness answer beside it, secrets as references only.
 */
export function authProxyEnv(config: ProxyConfig, idePort: number): k8s.V1EnvVar[] {
  const secret = (key: string): k8s.V1EnvVarSource => ({
    secretKeyRef: { name: config.authProxySecretName, key },
  });
  const env: k8s.V1EnvVar[] = [
    { name: 'AUTH_PROXY_ADDRESS', value: `0.0.0.0:${config.authProxyPort}` },
    { name: 'AUTH_PROXY_UPSTREAM', value: `http://127.0.0.1:${idePort}` },
    // Where it answers the IDE container's readiness probe (ideReadiness).
    { name: 'AUTH_PROXY_READY_ADDRESS', value: `0.0.0.0:${config.authProxyReadyPort}` },
    { name: 'OAUTH2_PROXY_COOKIE_SECRET', valueFrom: secret(AUTH_PROXY_SECRET_KEYS.cookieSecret) },
  ];
  if (!checksIdentity(config)) return env;
  return [
    ...env,
    { name: 'AUTH_PROXY_ISSUER', value: config.sessionIssuer },
    { name: 'AUTH_PROXY_CLIENT_ID', value: config.sessionClientId },
    { name: 'AUTH_PROXY_CLIENT_SECRET', valueFrom: secret(AUTH_PROXY_SECRET_KEYS.clientSecret) },
    { name: 'AUTH_PROXY_USER_CLAIM', value: config.sessionUserClaim },
    { name: 'AUTH_PROXY_AUDIENCE', value: config.sessionAudience ?? config.sessionClientId },
    { name: 'AUTH_PROXY_USERS_FILE', value: AUTH_PROXY_USERS_FILE },
  ];
}

export interface AuthProxyParts {
  container: k8s.V1Container;
  /**
   * The IDE container's readiness probe, answered by this container (admission/main.go): Ready once
   * the IDE listens on its port and the proxy on its own (the ingress reaches the session through
   * it). One probe for both: the pod's readiness waits on one of the kubelet's probe runs, not two. A
   * probe waits for an IDE that has not listened yet, so the pod is Ready the moment it does rather
   * than at the kubelet's next tick. Asked every second, as a student waits for it; three misses in a
   * row before a busy IDE counts as down.
   */
  ideReadiness: k8s.V1Probe;
  /** Mounted in the proxy container only: the IDE container gets nothing of the proxy's. */
  volumes: k8s.V1Volume[];
}

/** The proxy container and the volumes of its allowed-users file and admission token (none in anonymous mode). */
export function authProxy(config: ProxyConfig, idePort: number, users: AllowedUsers): AuthProxyParts {
  const container: k8s.V1Container = {
    name: AUTH_PROXY_CONTAINER,
    image: config.authProxyImage,
    args: authProxyArgs(config),
    ports: [
      { name: 'http', containerPort: config.authProxyPort },
      { name: 'ready', containerPort: config.authProxyReadyPort },
    ],
    // No probe of its own: the IDE container's (ideReadiness) answers for the proxy too.
    env: authProxyEnv(config, idePort),
    // The project's own image, whatever the app definition says of the IDE's.
    ...containerSecurity('restricted'),
    resources: { requests: { memory: '32M', cpu: '10m' }, limits: { memory: '128M', cpu: '200m' } },
  };
  const ideReadiness: k8s.V1Probe = {
    // By number: a named port is looked up in the probed container, and this one is the proxy's.
    httpGet: { path: '/ready', port: config.authProxyReadyPort as unknown as k8s.IntOrString },
    periodSeconds: 1,
    timeoutSeconds: 2,
    failureThreshold: 3,
  };
  if (!checksIdentity(config)) return { container, ideReadiness, volumes: [] };
  if ('secret' in users) {
    container.volumeMounts = [{ name: USERS_VOLUME, mountPath: AUTH_PROXY_USERS_DIR, readOnly: true }];
    const items = [{ key: users.key, path: 'users' }];
    return {
      container,
      ideReadiness,
      volumes: [{ name: USERS_VOLUME, secret: { secretName: users.secret, items } }],
    };
  }
  container.volumeMounts = [
    { name: USERS_VOLUME, mountPath: AUTH_PROXY_USERS_DIR },
    { name: ADMISSION_VOLUME, mountPath: AUTH_PROXY_ADMISSION_DIR, readOnly: true },
  ];
  container.ports!.push({ name: AUTH_PROXY_ADMISSION_PORT_NAME, containerPort: config.authProxyAdmissionPort });
  // No liveness probe on the admission: a restart of this container would free the proxy's port for a
  // moment, and the IDE container (same network) could take it. An admission that ended only fails
  // the claim's injection; it caps its connections and times them out (admission/main.go).
  container.env!.push(
    { name: 'AUTH_PROXY_ADMISSION_ADDRESS', value: `0.0.0.0:${config.authProxyAdmissionPort}` },
    { name: 'AUTH_PROXY_ADMISSION_TOKEN_FILE', value: `${AUTH_PROXY_ADMISSION_DIR}/token` },
  );
  const tokenItems = [{ key: AUTH_PROXY_ADMISSION_TOKEN_KEY, path: 'token' }];
  return {
    container,
    ideReadiness,
    volumes: [
      { name: USERS_VOLUME, emptyDir: { sizeLimit: '1Mi' } },
      { name: ADMISSION_VOLUME, secret: { secretName: users.admission.tokenSecret, items: tokenItems } },
    ],
  };
}
