// The bridge's configuration comes from the session container's environment, read once at activation.
import { BRIDGE_PROCESS_URL, DATA_BRIDGE_TOKEN_ENV, DATA_BRIDGE_URL_ENV } from '../../server/src/model/data-bridge.js';

export const DEFAULT_PORT = 16281;

/** Shortest token accepted: the operator's are 43 characters (32 random bytes, base64url). */
export const MIN_TOKEN_LENGTH = 16;

export type BridgeConfig =
  | { enabled: false; reason: string }
  | {
      enabled: true;
      host: string;
      port: number;
      token: string;
      processUrl?: string;
      workspaceDir?: string;
      agentCommand?: string;
    }
  | { enabled: true; error: string };

/**
 * DATA_BRIDGE_ENABLED must be 1 or true (case-insensitive); DATA_BRIDGE_PORT a TCP port, default 16281;
 * DATA_BRIDGE_TOKEN the secret the operator authenticates with (required: without it, no port opens);
 * DATA_BRIDGE_USERS_FILE is ignored: the proxy's allowed users are the proxy's own (older operators set it);
 * DATA_BRIDGE_URL, when set (by the session image, which runs the bridge as its own process), where the
 * extension reads the values from instead of serving: http on loopback only;
 * WORKSPACE_DIR, the folder the IDE has open, whose repository POST /save saves, with the agent
 * DATA_BRIDGE_AGENT (default `ide-cloud-agent` from PATH); DATA_BRIDGE_HOST, the address to listen on
 * (default all of the pod's).
 */
export function readBridgeConfig(env: Record<string, string | undefined>): BridgeConfig {
  const flag = env.DATA_BRIDGE_ENABLED?.trim().toLowerCase();
  if (flag !== '1' && flag !== 'true') {
    const reason =
      env.DATA_BRIDGE_ENABLED === undefined ? 'DATA_BRIDGE_ENABLED is not set' : 'DATA_BRIDGE_ENABLED is not 1 or true';
    return { enabled: false, reason };
  }
  const raw = env.DATA_BRIDGE_PORT?.trim();
  const port = raw === undefined || raw === '' ? DEFAULT_PORT : /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    return { enabled: true, error: `DATA_BRIDGE_PORT must be an integer from 1 to 65535, got "${raw}"` };
  }
  const token = env[DATA_BRIDGE_TOKEN_ENV]?.trim() ?? '';
  if (token.length < MIN_TOKEN_LENGTH) {
    const why = token === '' ? 'is not set' : `is shorter than ${MIN_TOKEN_LENGTH} characters`;
    return { enabled: true, error: `${DATA_BRIDGE_TOKEN_ENV} ${why} (the secret the operator authenticates with)` };
  }
  const processUrl = env[DATA_BRIDGE_URL_ENV]?.trim();
  if (processUrl && !BRIDGE_PROCESS_URL.test(processUrl)) {
    return { enabled: true, error: `DATA_BRIDGE_URL must be http://127.0.0.1:<port> or http://localhost:<port>` };
  }
  const workspaceDir = env.WORKSPACE_DIR?.trim();
  const agentCommand = env.DATA_BRIDGE_AGENT?.trim();
  return {
    enabled: true,
    host: env.DATA_BRIDGE_HOST?.trim() || '0.0.0.0',
    port,
    token,
    ...(processUrl ? { processUrl } : {}),
    ...(workspaceDir ? { workspaceDir } : {}),
    ...(agentCommand ? { agentCommand } : {}),
  };
}
