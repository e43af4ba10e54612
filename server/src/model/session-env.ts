import { LABELS, OPERATOR_MANAGER } from './api-group.js';
import { ErrorCode } from './error-codes.js';

/**
 * Which Secrets and ConfigMaps a session may take values from (env.fromSecrets, env.fromConfigMaps):
 * only those an administrator marked for session use with this label, and never the installation's
 * own (its tokens, the operator's objects), marked or not. The service checks before a launch writes
 * anything; the operator checks again before it reads or mounts one (a Session made with kubectl).
 */
export const SESSION_ENV_LABEL = 'ide-cloud.io/session-env';

/** The chart's `app.kubernetes.io/name`, which every object of the installation carries. */
const INSTALLATION_NAME = 'ide-cloud';

export type EnvSourceKind = 'secret' | 'config map';

type Metadata = { labels?: Record<string, string> } | undefined;

export interface EnvSourceRefusal {
  code: number;
  reason: string;
}

/** Why the object may not be named as a session's env source (undefined: it may). Names only, never data. */
export function envSourceRefusal(kind: EnvSourceKind, name: string, metadata: Metadata): EnvSourceRefusal | undefined {
  const refuse = (why: string) => ({ code: ErrorCode.badRequest, reason: `${kind} ${name} ${why}` });
  if (!metadata) return refuse('does not exist');
  const labels = metadata.labels ?? {};
  if (labels['app.kubernetes.io/name'] === INSTALLATION_NAME || labels[LABELS.managedBy] === OPERATOR_MANAGER) {
    return refuse('belongs to the installation and cannot be given to a session');
  }
  if (labels[SESSION_ENV_LABEL] !== 'true') {
    return refuse(`is not marked for session use (label ${SESSION_ENV_LABEL}: "true")`);
  }
  return undefined;
}

/** The first refusal among the config maps and secrets a session names, reading each one's metadata. */
export async function envSourcesRefusal(
  sources: { configMaps?: readonly string[]; secrets?: readonly string[] },
  metadataOf: (kind: EnvSourceKind, name: string) => Promise<Metadata>,
): Promise<EnvSourceRefusal | undefined> {
  const named: [EnvSourceKind, string][] = [
    ...(sources.configMaps ?? []).map((name): [EnvSourceKind, string] => ['config map', name]),
    ...(sources.secrets ?? []).map((name): [EnvSourceKind, string] => ['secret', name]),
  ];
  for (const [kind, name] of named) {
    const refusal = envSourceRefusal(kind, name, await metadataOf(kind, name));
    if (refusal) return refusal;
  }
  return undefined;
}
