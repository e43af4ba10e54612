/**
 * The data bridge's credentials, shared by the operator (which creates and sends them) and the pod
 * template (which hands them to the bridge): a per-instance token in a Secret, sent as
 * `Authorization: Bearer <token>` on POST /data with the reservation it injects for. The bridge
 * (extension/src/config.ts, server.ts) reads the same names.
 */
export const DATA_BRIDGE_TOKEN_ENV = 'DATA_BRIDGE_TOKEN';
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
 * The stop warning, the IDE's activity and the save of the student's work travel through the bridge
 * too (extension/src/server.ts serves them, extension/README.md documents the wire): the operator
 * posts a notice with the seconds left, reads how long ago the IDE was last used, and asks for the
 * save before an idle or lifetime stop; the extension reads the notice and reports activity on loopback.
 */
export const DATA_BRIDGE_PATHS = { notice: '/notice', activity: '/activity', save: '/save' } as const;

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

/** Answer of POST /save: what the agent did with the workspace's repository. */
export type SaveWorkResult =
  | { outcome: 'saved'; branch: string; repository: string }
  | { outcome: 'nothing-to-save' }
  | { outcome: 'failed'; code: string; message: string };
