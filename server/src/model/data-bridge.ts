/**
 * The data bridge's wire, written once for its three parties: the operator (which creates the
 * credentials, injects the values and posts the stop notice), the bridge (extension/src, which
 * serves it) and the agent (agent/src, which reads the values from the bridge process and answers
 * the save). The extension and the agent import this file by relative path and bundle it with
 * esbuild, and the session image copies it for their build (images/session-base/Dockerfile): it
 * imports nothing. Each instance has a token in a Secret, sent as `Authorization: Bearer <token>`,
 * and POST /data names the reservation it injects for.
 */

/** The variable that hands the instance's token to the bridge (and, beside the IDE, to the agent). */
export const DATA_BRIDGE_TOKEN_ENV = 'DATA_BRIDGE_TOKEN';
/**
 * Where the session image runs the bridge as its own process (the extension and the agent read the
 * values there): http on this host only, `BRIDGE_PROCESS_URL`.
 */
export const DATA_BRIDGE_URL_ENV = 'DATA_BRIDGE_URL';
/** The address a bridge process may have: http on loopback, with its port. */
export const BRIDGE_PROCESS_URL = /^http:\/\/(127\.0\.0\.1|localhost):\d{1,5}\/?$/;

/**
 * The launch values a session is set up from, by the names the landing page and the learning
 * platforms send them (env.fromMap), the bridge carries and the agent reads. There is deliberately
 * no GIT_TOKEN: credentials travel inside GIT_URI or come from the learning platform.
 */
export const SESSION_KEYS = [
  'IDE',
  'GIT_URI',
  'GIT_USER',
  'GIT_MAIL',
  'PLATFORM_TOKEN',
  'PLATFORM_URL',
  'TEMPLATE',
] as const;

export type SessionKey = (typeof SESSION_KEYS)[number];

/** Key of the token in the instance's Secret. */
export const DATA_BRIDGE_TOKEN_KEY = 'token';
/** Header naming the reservation (the Session's uid): the bridge takes one injection per reservation. */
export const DATA_BRIDGE_RESERVATION_HEADER = 'x-ide-cloud-reservation';
/**
 * Key of the proxy's admission token in the same Secret (operator/auth-proxy.ts): mounted into the
 * proxy container only, never into the IDE container, which gets the bridge's token alone.
 */
export const AUTH_PROXY_ADMISSION_TOKEN_KEY = 'admission-token';

/**
 * The bridge's routes (extension/src/server.ts serves them, extension/README.md documents the wire):
 * the operator posts the values to /data, and the agent beside the IDE reads them back there. The stop
 * warning, the IDE's activity and the save of the student's work travel through the bridge too: the
 * operator posts a notice with the seconds left, reads how long ago the IDE was last used, and asks
 * for the save before an idle or lifetime stop; the extension reads the notice and reports activity
 * on loopback.
 */
export const DATA_BRIDGE_PATHS = { data: '/data', notice: '/notice', activity: '/activity', save: '/save' } as const;

/** The longest a GET /data?wait=… holds its answer; the caller asks again after it. */
export const DATA_WAIT_MAX_SECONDS = 60;

/** Answer of GET /data (on this host, with the token): the values held, and whether they were injected. */
export interface DataAnswer {
  environment: Record<string, string>;
  injected: boolean;
}

/** Why a session is about to stop, as the notice and the stop-reason annotation name it. */
export type StopKind = 'Idle' | 'MaxLifetime';

/** Body of POST /notice. */
export interface StopNotice {
  reason: StopKind;
  /** Seconds until the stop, counted by the bridge from when it receives the notice (no clock skew). */
  secondsLeft: number;
  /** Whether the student's uncommitted work will be saved to a branch before the stop. */
  saveWork: boolean;
}

/** Body of POST /save (an empty body asks with the bridge's own bound). */
export interface SaveWorkRequest {
  /**
   * Seconds the operator waits for the answer, counted from when it sends (no clock skew): the bridge
   * stops the agent early enough to answer within them, so a save never goes on after the stop.
   */
  timeoutSeconds?: number;
}

/**
 * The most the operator reads of any answer from a session's pod (the bridge's port, which the
 * student can take over): every answer of the bridge is far smaller; a longer one is a failed call.
 */
export const BRIDGE_ANSWER_MAX_BYTES = 8 * 1024;

/**
 * The stop-warning annotation's value: the kind of stop warned of and when, e.g. `Idle
 * 2026-01-01T12:00:00.000Z`; a warning counts only for a stop of its own kind.
 */
export function stopWarningValue(kind: StopKind, at: number): string {
  return `${kind} ${new Date(at).toISOString()}`;
}

/** The stop-warning annotation read back; undefined when absent or unreadable. */
export function parseStopWarning(value: string | undefined): { kind: StopKind; at: number } | undefined {
  const match = /^(Idle|MaxLifetime) (\S+)$/.exec(value ?? '');
  const at = match ? Date.parse(match[2]!) : NaN;
  return match && Number.isFinite(at) ? { kind: match[1] as StopKind, at } : undefined;
}

/** Answer of GET /activity: seconds since the IDE last reported activity, null when it never did. */
export interface BridgeActivity {
  secondsSinceActivity: number | null;
}

/**
 * Answer of POST /save: what the agent did with the workspace's repository (the agent's
 * `save --json` line, which the bridge passes on).
 */
export type SaveWorkResult =
  | { outcome: 'saved'; branch: string; repository: string }
  | { outcome: 'nothing-to-save' }
  | { outcome: 'failed'; code: string; message: string };
