import { createHash } from 'node:crypto';
import { LABELS } from './api-group.js';

/** Longest DNS-1123 label (RFC 1123), the limit for names of Services, labels values and our CRs. */
export const DNS_LABEL_MAX = 63;

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function isDnsLabel(value: string): boolean {
  return value.length <= DNS_LABEL_MAX && DNS_LABEL.test(value);
}

/** Lowercases and replaces every character outside `[a-z0-9-]` with `-`, trimming `-` at both ends. */
export function sanitizeDnsPart(value: string): string {
  return value
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .replace(/^-+|-+$/g, '');
}

function shortHash(value: string): string {
  return createHash('sha256').update(value).digest('hex').slice(0, 8);
}

/**
 * Joins parts into one DNS-1123 label. When the result is longer than `max`, it is cut and a short
 * hash of the full, uncut input is appended, so two long inputs that share a prefix never collide.
 */
export function dnsLabel(parts: readonly string[], max: number = DNS_LABEL_MAX): string {
  const joined = parts.map(sanitizeDnsPart).filter(Boolean).join('-').replace(/-{2,}/g, '-');
  const name = joined.length > 0 ? joined : 'x';
  if (name.length <= max) return name;
  const hash = shortHash(parts.join('\u0000'));
  const head = name.slice(0, max - hash.length - 1).replace(/-+$/, '');
  return `${head}-${hash}`;
}

/** `ws-<appDef>-<user>-<uuid>`: the name of a workspace created by a launch that named none. */
export function generatedWorkspaceName(appDefinition: string, user: string, uuid: string): string {
  return dnsLabel(['ws', appDefinition, user, uuid]);
}

const SESSION_PREFIX = 'session-';
/** Hex characters of the hash that stands for a cut workspace name (96 bits: no name can be made to match). */
const SESSION_CUT_HASH = 24;

/**
 * Name of a session for a workspace: one session per workspace, so the name follows from it. The map
 * is one-to-one, so no workspace name can take another workspace's session name (issue 15, item 10):
 * a workspace name of up to 55 characters gives `session-<workspace>` as it is; a longer one gives
 * `s-<head>-<hash>`, the hash (sha256, 24 hex) of the whole workspace name. The two forms never meet
 * (`session-…` against `s-…`), and a long name's hash cannot be matched by another name.
 */
export function sessionNameFor(workspace: string): string {
  const whole = `${SESSION_PREFIX}${workspace}`;
  if (whole.length <= DNS_LABEL_MAX) return whole;
  const hash = createHash('sha256').update(workspace).digest('hex').slice(0, SESSION_CUT_HASH);
  const head = workspace.slice(0, DNS_LABEL_MAX - 's-'.length - hash.length - 1).replace(/-+$/, '');
  return `s-${head}-${hash}`;
}

/** Removes `user:password@` from a URL-like string; leaves anything that is not a URL untouched. */
export function stripCredentials(uri: string): string {
  return uri.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
}

/** Java's `String.hashCode`: `h = 31 * h + charCode`, wrapped to a signed 32-bit integer. */
export function stringHash32(value: string): number {
  let h = 0;
  for (let i = 0; i < value.length; i++) {
    h = ((h << 5) - h + value.charCodeAt(i)) | 0;
  }
  return h;
}

const LANDING_PART_MAX = 10;
/** Hex characters of a landing name's owner tag (64 bits). */
const LANDING_TAG = 16;
/** What a landing-page name looks like: `ws-…-<gitUri hash, 8 hex>-<owner tag, 16 hex>`. */
const LANDING_NAME = /^(ws-(?:[a-z0-9-]*-)?[0-9a-f]{8})-([0-9a-f]{16})$/;

function landingPart(value: string): string {
  return sanitizeDnsPart(value).slice(0, LANDING_PART_MAX).replace(/-+$/, '');
}

/** The owner tag of a landing name: a hash of the whole user id and the rest of the name. */
function landingOwnerTag(user: string, prefix: string): string {
  return createHash('sha256')
    .update(`ide-cloud/landing-workspace\u0000${user}\u0000${prefix}`)
    .digest('hex')
    .slice(0, LANDING_TAG);
}

/** Last path segment of a repository URL without `.git`. */
export function repositoryName(gitUri: string): string {
  const path = stripCredentials(gitUri)
    .replace(/[?#].*$/, '')
    .replace(/\/+$/, '');
  const last = path.slice(path.lastIndexOf('/') + 1).replace(/:/g, '/');
  return last.slice(last.lastIndexOf('/') + 1).replace(/\.git$/, '');
}

/**
 * The landing page's deterministic workspace name: `ws-<app>-<repo>-<user>-<hash>-<tag>`. The hash is
 * taken of gitUri without credentials, so a link carrying a new token lands in the same workspace;
 * the tag is a hash of the whole user id and the name before it, so two users never get the same
 * name (the user part is cut), and the service lets only that user create it
 * ({@link isLandingNameOfAnotherUser}): nobody can take a user's landing workspace in advance.
 */
export function landingWorkspaceName(appDefinition: string, user: string, gitUri?: string): string {
  const repo = gitUri ? repositoryName(gitUri) : 'playground';
  const hash = Math.abs(stringHash32(gitUri ? stripCredentials(gitUri) : ''))
    .toString(16)
    .padStart(8, '0');
  const prefix = ['ws', landingPart(appDefinition), landingPart(repo), landingPart(user), hash]
    .filter(Boolean)
    .join('-');
  return `${prefix}-${landingOwnerTag(user, prefix)}`;
}

/**
 * Whether `name` has the form of a landing-page name whose owner tag is not `user`'s: such a name is
 * reserved for the user it was made for, and nobody else may create it.
 */
export function isLandingNameOfAnotherUser(name: string, user: string): boolean {
  const match = LANDING_NAME.exec(name);
  return match !== null && landingOwnerTag(user, match[1]!) !== match[2];
}

/**
 * Label value that stands for a user. User ids are e-mails, which label values cannot hold, so a
 * hash is used: listing a user's sessions is then one label-selected list, not a scan.
 */
export function userLabelValue(user: string): string {
  return createHash('sha256').update(user).digest('hex').slice(0, 40);
}

/** Name of a session's config store: the ConfigMap the service writes keys into (`<sessionName>-config`). */
export function configStoreName(sessionName: string): string {
  return `${sessionName}-config`;
}

/** Value of the `app` label of a session's pod: `<sessionName>-<sessionUID>` as one DNS label. */
export function sessionPodAppLabel(session: { metadata: { name: string; uid?: string } }): string {
  return dnsLabel([session.metadata.name, session.metadata.uid ?? '']);
}

/** Name of the warm pool instance `id` of an app definition (its Deployment and Service). */
export function poolInstanceName(appDefinition: string, id: number): string {
  return dnsLabel([appDefinition, 'pool', String(id)]);
}

/**
 * Label selector of the pods that serve a session: its own pods (lazy), or those of the warm pool
 * instance reserved for it (eager), which keep the instance's labels.
 */
export function sessionPodSelector(session: {
  metadata: { name: string; uid?: string };
  spec: { appDefinition: string };
  status?: { startStrategy?: string; instanceId?: string };
}): string {
  const instanceId = Number(session.status?.instanceId);
  if (session.status?.startStrategy === 'eager' && Number.isInteger(instanceId)) {
    return `${LABELS.poolInstance}=${poolInstanceName(session.spec.appDefinition, instanceId)}`;
  }
  return `app=${sessionPodAppLabel(session)}`;
}
