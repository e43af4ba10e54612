// The real git binary, run without a shell. GIT_TERMINAL_PROMPT=0 makes a missing credential fail at
// once instead of waiting for a prompt nobody answers; every message that leaves here is redacted.
import { execFile } from 'node:child_process';
import { AgentError } from './errors.js';
import { redact } from './redact.js';

export interface GitOptions {
  cwd?: string;
  /** Environment for git; GIT_TERMINAL_PROMPT=0 is always added. Defaults to process.env. */
  env?: NodeJS.ProcessEnv;
  /** Values to redact from any error message, besides credentialed URLs. */
  secrets?: readonly (string | undefined)[];
  timeoutMs?: number;
  /** Written to git's standard input (which is closed otherwise). */
  input?: string;
}

export interface GitResult {
  stdout: string;
  stderr: string;
}

/** git failed: `stderr` is already redacted. */
export class GitCommandError extends AgentError {
  constructor(
    readonly command: string,
    readonly exitCode: number | null,
    readonly stderr: string,
  ) {
    const detail = stderr.trim().split('\n').slice(-3).join(' / ') || `exit code ${exitCode}`;
    super('GitFailed', `git ${command} failed: ${detail}`, 'See the git message above; run the step again once fixed');
    this.name = 'GitCommandError';
  }
}

const SUBCOMMANDS = new Set([
  'clone',
  'config',
  'remote',
  'fetch',
  'init',
  'rev-parse',
  'ls-remote',
  'status',
  'push',
  'credential',
  'read-tree',
  'add',
  'write-tree',
  'commit-tree',
  'rev-list',
]);

export function gitEnvironment(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...env, GIT_TERMINAL_PROMPT: '0', GCM_INTERACTIVE: 'never', GIT_ASKPASS: '', SSH_ASKPASS: '' };
}

export function git(args: readonly string[], options: GitOptions = {}): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      [...args],
      {
        cwd: options.cwd,
        env: gitEnvironment(options.env),
        timeout: options.timeoutMs ?? 10 * 60_000,
        maxBuffer: 16 * 1024 * 1024,
        encoding: 'utf8',
      },
      (error, stdout, stderr) => {
        if (!error) {
          resolve({ stdout, stderr });
          return;
        }
        const secrets = options.secrets ?? [];
        // Only the subcommand is named: the other arguments may hold a credentialed URL.
        const command = args.find((arg) => SUBCOMMANDS.has(arg)) ?? 'command';
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
          reject(new AgentError('GitFailed', 'git is not installed', 'Install git in the session image'));
          return;
        }
        const exitCode = typeof error.code === 'number' ? error.code : null;
        reject(new GitCommandError(command, exitCode, redact(String(stderr || error.message), secrets)));
      },
    );
    child.stdin?.on('error', () => {});
    child.stdin?.end(options.input ?? '');
  });
}

/** Sets user.name and user.email (global scope unless told otherwise), skipping values not given. */
export async function configureIdentity(
  identity: { name?: string; email?: string },
  options: GitOptions & { scope?: 'global' | 'local' } = {},
): Promise<string[]> {
  const scope = options.scope ?? 'global';
  const set: string[] = [];
  for (const [key, value] of [
    ['user.name', identity.name],
    ['user.email', identity.email],
  ] as const) {
    if (!value) continue;
    await git(['config', `--${scope}`, key, value], options);
    set.push(key);
  }
  return set;
}
