// POST /save: runs the session agent's save (`ide-cloud-agent save --json`) on the workspace, with the
// launch values it needs in its environment (never in its arguments, which anyone on the machine can
// list), and answers what it did. One save at a time: a second request while one runs gets its result.
// The operator says how long it waits for the answer (`timeoutSeconds`): the agent is stopped early
// enough to answer within it, so no save goes on once the operator has given up and stops the session.
import { spawn } from 'node:child_process';
import { DATA_BRIDGE_TOKEN_ENV, type SaveWorkResult, type SessionKey } from '../../server/src/model/data-bridge.js';
import type { Logger } from './logger.js';
import type { EnvironmentStore } from './store.js';

/** The values the agent's save reads: the repository's credential, the identity, the platform. */
const AGENT_KEYS: readonly SessionKey[] = ['GIT_URI', 'GIT_USER', 'GIT_MAIL', 'PLATFORM_URL', 'PLATFORM_TOKEN'];
export const DEFAULT_AGENT_COMMAND = 'ide-cloud-agent';
export const DEFAULT_SAVE_TIMEOUT_MS = 120_000;

/**
 * How long the agent may run when the caller waits `timeoutSeconds` for the answer: that less a
 * margin to stop it and answer (a tenth, from 1 to 5 s), never more than the bridge's own bound.
 */
export function agentTimeoutMs(ownBoundMs: number, timeoutSeconds: number | undefined): number {
  if (timeoutSeconds === undefined) return ownBoundMs;
  const callerMs = timeoutSeconds * 1000;
  const margin = Math.min(5000, Math.max(1000, callerMs / 10));
  return Math.min(ownBoundMs, Math.max(500, callerMs - margin));
}

export interface WorkSaverOptions {
  /** The folder the IDE has open (WORKSPACE_DIR); without it nothing can be saved. */
  workspaceDir?: string;
  /** The agent's executable (DATA_BRIDGE_AGENT), default `ide-cloud-agent` from PATH. */
  agentCommand?: string;
  timeoutMs?: number;
  /** The environment the agent starts from (the bridge's own, without its token). */
  baseEnv?: NodeJS.ProcessEnv;
}

export class WorkSaver {
  private running: Promise<SaveWorkResult> | undefined;

  constructor(
    private readonly store: Pick<EnvironmentStore, 'pick'>,
    private readonly logger: Logger,
    private readonly options: WorkSaverOptions,
  ) {}

  /** Runs the save, or joins the one under way; `timeoutSeconds`: how long the caller waits. */
  save(timeoutSeconds?: number): Promise<SaveWorkResult> {
    this.running ??= this.run(timeoutSeconds).finally(() => (this.running = undefined));
    return this.running;
  }

  private async run(timeoutSeconds: number | undefined): Promise<SaveWorkResult> {
    const dir = this.options.workspaceDir;
    if (!dir) return this.failed('SaveUnavailable', 'the bridge knows no workspace folder (WORKSPACE_DIR)');
    const env: NodeJS.ProcessEnv = { ...(this.options.baseEnv ?? process.env), ...this.store.pick(AGENT_KEYS) };
    delete env[DATA_BRIDGE_TOKEN_ENV]; // the agent has no use for the instance's token
    delete env.SESSION_ENV_STRATEGY;
    this.logger.info('saving the work: running the agent');
    const { code, stdout } = await runAgent(
      this.options.agentCommand ?? DEFAULT_AGENT_COMMAND,
      ['save', '--json', '--dir', dir],
      env,
      agentTimeoutMs(this.options.timeoutMs ?? DEFAULT_SAVE_TIMEOUT_MS, timeoutSeconds),
    );
    const result = parseAgentAnswer(stdout);
    if (!result) {
      return this.failed(
        'SaveFailed',
        code === null ? 'the agent did not finish in time' : `the agent exited with ${code}`,
      );
    }
    // Only the outcome: the agent's own lines stay in its output, which the bridge does not keep.
    this.logger.info(`save: ${result.outcome}${result.outcome === 'failed' ? ` (${result.code})` : ''}`);
    return result;
  }

  private failed(code: string, message: string): SaveWorkResult {
    this.logger.warn(`save: failed (${code})`);
    return { outcome: 'failed', code, message };
  }
}

/** The agent's last stdout line, when it is one of its results. */
function parseAgentAnswer(stdout: string): SaveWorkResult | undefined {
  const last = stdout.trim().split('\n').at(-1) ?? '';
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(last) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  const text = (value: unknown) => (typeof value === 'string' ? value.slice(0, 500) : '');
  if (parsed.outcome === 'saved') {
    return { outcome: 'saved', branch: text(parsed.branch), repository: text(parsed.repository) };
  }
  if (parsed.outcome === 'nothing-to-save') return { outcome: 'nothing-to-save' };
  if (parsed.outcome === 'failed') return { outcome: 'failed', code: text(parsed.code), message: text(parsed.message) };
  return undefined;
}

function runAgent(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    let stdout = '';
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'ignore'], timeout: timeoutMs });
    child.stdout.on('data', (chunk: Buffer) => (stdout = (stdout + chunk.toString('utf8')).slice(-64 * 1024)));
    child.on('error', () => resolve({ code: -1, stdout: '' }));
    child.on('close', (code, signal) => resolve({ code: signal ? null : code, stdout }));
    // A daemon git started (its credential cache) may hold the pipe open after the agent exited.
    child.on('exit', (code, signal) => setTimeout(() => resolve({ code: signal ? null : code, stdout }), 1000).unref());
  });
}
