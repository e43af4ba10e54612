// Clones a repository into the existing workspace folder, exactly from the URL given (credentials only
// when embedded in it). Idempotent: a folder that already holds a repository is never touched again,
// so a reused persistent workspace keeps the user's files. A credentialed URL is cloned by its plain
// form, with the credential passed to git through the environment, so the stored remote and every
// process's arguments are free of it; no credential helper of the machine stores the token.
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { AgentError } from './errors.js';
import { rememberCredential, urlCredential } from './credentials.js';
import { git, GitCommandError, type GitOptions } from './git.js';
import { credentialsOf, hasCredentials, stripCredentials } from './redact.js';

export type CloneOutcome =
  /** The repository was cloned now. */
  | 'cloned'
  /** The folder already holds this repository: left as it is. */
  | 'already-present'
  /** The folder already holds another repository: left as it is. */
  | 'other-repository';

export interface CloneResult {
  outcome: CloneOutcome;
  dir: string;
  /** The remote as stored in the clone, without credentials. */
  remote: string;
}

export interface CloneOptions extends GitOptions {
  /** Secrets to redact besides the URL's own credentials (e.g. a participation token). */
  secrets?: readonly (string | undefined)[];
  /**
   * How long the URL's credential stays in git's in-memory credential cache for later pushes; 0 keeps
   * none. Default: SESSION_CREDENTIAL_CACHE_SECONDS or 8 hours.
   */
  credentialCacheSeconds?: number;
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

/** Whether two remotes name one repository: compared without credentials, trailing `/` or `.git`. */
export function sameRepository(a: string, b: string): boolean {
  const norm = (uri: string) =>
    stripCredentials(uri)
      .replace(/\/+$/, '')
      .replace(/\.git$/, '');
  return norm(a) === norm(b);
}

/** Maps git's clone failures to errors that say what to do; messages never hold the URL's secrets. */
export function classifyCloneError(error: unknown, uri: string): unknown {
  if (!(error instanceof GitCommandError)) return error;
  const text = error.stderr;
  const credentialed = hasCredentials(uri);
  const safeUri = stripCredentials(uri);
  if (
    /could not read (Username|Password)|terminal prompts disabled|Authentication failed|returned error: 40[13]/i.test(
      text,
    )
  ) {
    return credentialed
      ? new AgentError(
          'CredentialRefused',
          `the repository ${safeUri} refused the credential in the clone URL`,
          'The token may be expired or lack access: get a fresh one (for a participation, run the participation clone again)',
        )
      : new AgentError(
          'CredentialRequired',
          `the repository ${safeUri} needs a credential and the clone URL carries none`,
          'Embed it in the URL as https://<user>:<token>@host/path.git, or use the participation clone',
        );
  }
  if (/returned error: 404|not found|does not appear to be a git repository|does not exist/i.test(text)) {
    return new AgentError(
      'RepositoryNotFound',
      `the repository ${safeUri} was not found`,
      'Check the repository URL (GIT_URI) and that the account may see it',
    );
  }
  if (/Could not resolve host|Failed to connect|Connection refused|Connection timed out|unable to access/i.test(text)) {
    return new AgentError(
      'GitRemoteUnreachable',
      `the git server of ${safeUri} is unreachable`,
      'Check the network from the session to the git host and try again',
    );
  }
  return error;
}

async function currentRemote(dir: string, options: GitOptions): Promise<string> {
  const result = await git(['-C', dir, 'remote', 'get-url', 'origin'], options).catch(() => undefined);
  return result?.stdout.trim() ?? '';
}

/**
 * Hands git the URL's user and password from the environment (never in a process's arguments, which
 * anyone on the machine can list): the helper answers `get` with what IDE_CLOUD_GIT_* hold.
 */
export const ENVIRONMENT_CREDENTIAL_HELPER =
  '!f() { test "$1" = get || return 0; printf "username=%s\\npassword=%s\\n" "$IDE_CLOUD_GIT_USERNAME" "$IDE_CLOUD_GIT_PASSWORD"; }; f';

async function cloneFresh(uri: string, target: string, options: CloneOptions): Promise<void> {
  const secrets = [...(options.secrets ?? []), ...credentialsOf(uri)];
  const credential = urlCredential(uri);
  // An empty credential.helper list first: a helper configured on the machine must not store the token.
  const helpers = ['-c', 'credential.helper='];
  const env = { ...(options.env ?? process.env) };
  if (credential) {
    helpers.push('-c', `credential.helper=${ENVIRONMENT_CREDENTIAL_HELPER}`);
    env.IDE_CLOUD_GIT_USERNAME = credential.username;
    env.IDE_CLOUD_GIT_PASSWORD = credential.password;
  }
  try {
    await git([...helpers, 'clone', '--quiet', '--', stripCredentials(uri), target], { ...options, env, secrets });
  } catch (error) {
    throw classifyCloneError(error, uri);
  }
  if (credential)
    await rememberCredential(uri, target, { ...options, secrets, seconds: options.credentialCacheSeconds });
}

export async function cloneIntoWorkspace(uri: string, dir: string, options: CloneOptions = {}): Promise<CloneResult> {
  const remote = stripCredentials(uri);
  await mkdir(dir, { recursive: true });
  if (await exists(path.join(dir, '.git'))) {
    const stored = await currentRemote(dir, options);
    return { outcome: sameRepository(stored, uri) ? 'already-present' : 'other-repository', dir, remote: stored };
  }
  const entries = await readdir(dir);
  if (entries.length === 0) {
    await cloneFresh(uri, dir, options);
    return { outcome: 'cloned', dir, remote };
  }
  // The folder holds files but no repository (a fresh volume's lost+found, editor settings): clone
  // beside them and move the clone in, refusing when a name would be overwritten.
  const staging = path.join(dir, `.ide-cloud-clone-${randomBytes(4).toString('hex')}`);
  try {
    await cloneFresh(uri, staging, options);
    const incoming = await readdir(staging);
    const clashes = incoming.filter((name) => entries.includes(name));
    if (clashes.length > 0) {
      throw new AgentError(
        'WorkspaceConflict',
        `the workspace ${dir} already holds ${clashes.slice(0, 5).join(', ')}, which the repository also has`,
        'Move those files away (or use an empty workspace) and run the clone again',
      );
    }
    for (const name of incoming) await rename(path.join(staging, name), path.join(dir, name));
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
  return { outcome: 'cloned', dir, remote };
}
