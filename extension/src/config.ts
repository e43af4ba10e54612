// The bridge's configuration comes from the session container's environment, read once at activation.

export const DEFAULT_PORT = 16281;

export type BridgeConfig =
  { enabled: false; reason: string } | { enabled: true; host: string; port: number } | { enabled: true; error: string };

/** DATA_BRIDGE_ENABLED must be 1 or true (case-insensitive); DATA_BRIDGE_PORT a TCP port, default 16281. */
export function readBridgeConfig(env: Record<string, string | undefined>): BridgeConfig {
  const flag = env.DATA_BRIDGE_ENABLED?.trim().toLowerCase();
  if (flag !== '1' && flag !== 'true') {
    const reason =
      env.DATA_BRIDGE_ENABLED === undefined ? 'DATA_BRIDGE_ENABLED is not set' : 'DATA_BRIDGE_ENABLED is not 1 or true';
    return { enabled: false, reason };
  }
  const raw = env.DATA_BRIDGE_PORT?.trim();
  if (raw === undefined || raw === '') return { enabled: true, host: '0.0.0.0', port: DEFAULT_PORT };
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    return { enabled: true, error: `DATA_BRIDGE_PORT must be an integer from 1 to 65535, got "${raw}"` };
  }
  return { enabled: true, host: '0.0.0.0', port };
}
