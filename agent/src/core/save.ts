// Saves the student's work before their session stops: the uncommitted changes of the workspace's
// repository (and commits not on any remote branch) go to a new branch of the student's repository.
// The commit is made on a private index and pushed by its id, so the student's branch, index and
// working tree stay exactly as they were (the stop may still not happen). The push authenticates with
// a fresh participation token from the learning platform when the repository came from a participation
// clone, else with the credential of GIT_URI; either travels to git through the environment only, and
// only to the repository it belongs to.
import { randomBytes } from 'node:crypto';
import { readdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { ENVIRONMENT_CREDENTIAL_HELPER, sameRepository } from './clone.js';
import { urlCredential } from './credentials.js';
import { AgentError } from './errors.js';
import { git, GitCommandError, type GitOptions } from './git.js';
import type { SessionValues } from './keys.js';
import type { RedactingLog } from './log.js';
import { PARTICIPATION_CONFIG } from './participation.js';
import { PlatformClient } from './platform.js';
import { stripCredentials } from './redact.js';

export const SAVED_BRANCH_PREFIX = 'ide-cloud/saved-';

export interface SaveWorkOptions extends GitOptions {
  /** The workspace folder: its own repository, else the first repository in a folder inside it. */
  dir: string;
  values: SessionValues;
  log: RedactingLog;
  now?: Date;
  fetch?: typeof fetch;
}

/** What the save did, with the commit; the CLI's `save --json` answers the wire's SaveWorkResult from it. */
export type SaveWorkOutcome =
  | { outcome: 'saved'; branch: string; repository: string; commit: string }
  | { outcome: 'nothing-to-save'; repository: string };

/** `ide-cloud/saved-20261123T171500Z`: one branch per save, named by its time (UTC). */
export function savedBranchName(now: Date): string {
  return `${SAVED_BRANCH_PREFIX}${now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')}`;
}

async function isRepository(dir: string): Promise<boolean> {
  return stat(path.join(dir, '.git')).then(
    () => true,
    () => false,
  );
}

async function findRepository(dir: string): Promise<string> {
  if (await isRepository(dir)) return dir;
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries.filter((e) => e.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
    if (await isRepository(path.join(dir, entry.name))) return path.join(dir, entry.name);
  }
  throw new AgentError('NoRepository', `the workspace ${dir} holds no git repository`, 'Nothing was saved');
}

/** A git value, or undefined where git has none (exit code 1 of `git config`, an unborn HEAD). */
async function optional(args: string[], options: GitOptions): Promise<string | undefined> {
  try {
    const value = (await git(args, options)).stdout.trim();
    return value === '' ? undefined : value;
  } catch (error) {
    if (error instanceof GitCommandError) return undefined;
    throw error;
  }
}

/**
 * Whether a push to `remote` (origin's URL as git expands it) goes there: origin's URL as configured,
 * fetch and push, is that very repository, so no url.*.insteadOf or pushInsteadOf rule of the
 * repository's or the user's config sends it, and a credential with it, to another host.
 */
async function pushesTo(repo: string, remote: string, options: GitOptions): Promise<boolean> {
  const configured = await optional(['-C', repo, 'config', '--get', 'remote.origin.url'], options);
  const push = await optional(['-C', repo, 'remote', 'get-url', '--push', 'origin'], options);
  return [configured, push].every((url) => url !== undefined && sameRepository(url, remote));
}

/** The user and password the push sends, or undefined to leave it to the clone's own helpers. */
async function pushCredential(
  repo: string,
  remote: string,
  options: SaveWorkOptions,
): Promise<{ username: string; password: string } | undefined> {
  const { values, log } = options;
  const participationId = await optional(['-C', repo, 'config', '--local', PARTICIPATION_CONFIG.id], options);
  if (participationId && values.PLATFORM_URL && values.PLATFORM_TOKEN) {
    log.addSecret(values.PLATFORM_TOKEN);
    const participant =
      (await optional(['-C', repo, 'config', '--local', PARTICIPATION_CONFIG.participant], options)) ?? values.GIT_USER;
    if (participant) {
      // The participation's token goes only to the repository its clone came from: not to a host that
      // origin was changed to since (by hand, a tool or a rewrite rule).
      const named = await optional(['-C', repo, 'config', '--local', PARTICIPATION_CONFIG.repository], options);
      if (!named || !sameRepository(named, remote) || !(await pushesTo(repo, remote, options))) {
        const pushUrl = (await optional(['-C', repo, 'remote', 'get-url', '--push', 'origin'], options)) ?? remote;
        throw new AgentError(
          'RepositoryChanged',
          `origin pushes to ${stripCredentials(pushUrl)}, not to the repository of participation ${participationId}${
            named ? ` (${stripCredentials(named)})` : ''
          }, so the participation's token is not sent there`,
          named
            ? `Set origin back with: git remote set-url origin ${stripCredentials(named)} (and remove url.*.insteadOf rules for it); nothing was saved`
            : 'Clone the participation again to save from it; nothing was saved',
        );
      }
      const platform = new PlatformClient({
        platformUrl: values.PLATFORM_URL,
        platformToken: values.PLATFORM_TOKEN,
        ...(options.fetch ? { fetch: options.fetch } : {}),
      });
      log.log(`requesting an access token for participation ${participationId} from ${platform.displayUrl}…`);
      const token = await platform.participationToken(participationId);
      log.addSecret(token);
      return { username: participant, password: token };
    }
  }
  if (values.GIT_URI && sameRepository(values.GIT_URI, remote) && (await pushesTo(repo, remote, options))) {
    log.addUrlCredentials(values.GIT_URI);
    return urlCredential(values.GIT_URI);
  }
  return undefined;
}

function classifyPushError(error: unknown, remote: string): unknown {
  if (!(error instanceof GitCommandError)) return error;
  if (
    /could not read (Username|Password)|terminal prompts disabled|Authentication failed|returned error: 40[13]/i.test(
      error.stderr,
    )
  ) {
    return new AgentError(
      'CredentialRefused',
      `the repository ${stripCredentials(remote)} refused the push`,
      'The token may be expired or lack write access; nothing was saved',
    );
  }
  if (
    /Could not resolve host|Failed to connect|Connection refused|Connection timed out|unable to access/i.test(
      error.stderr,
    )
  ) {
    return new AgentError(
      'GitRemoteUnreachable',
      `the git server of ${stripCredentials(remote)} is unreachable`,
      'Check the network from the session to the git host; nothing was saved',
    );
  }
  return error;
}

/**
 * Commits what is uncommitted in the workspace's repository (untracked files too, .gitignore
 * honoured) on top of HEAD and pushes it, or HEAD itself when only commits are unpushed, to a new
 * branch of `origin`. Nothing uncommitted and nothing unpushed: nothing is pushed.
 */
export async function saveWork(options: SaveWorkOptions): Promise<SaveWorkOutcome> {
  const { log, values } = options;
  const repo = await findRepository(options.dir);
  const remote = await optional(['-C', repo, 'remote', 'get-url', 'origin'], options);
  if (!remote)
    throw new AgentError('NoRepository', `the repository in ${repo} has no origin remote`, 'Nothing was saved');
  const repository = stripCredentials(remote);
  const head = await optional(['-C', repo, 'rev-parse', '--verify', '--quiet', 'HEAD'], options);
  const changes = (await git(['-C', repo, 'status', '--porcelain', '--untracked-files=all'], options)).stdout.trim();
  const unpushed = head
    ? Number((await git(['-C', repo, 'rev-list', '--count', 'HEAD', '--not', '--remotes'], options)).stdout.trim())
    : 0;
  if (changes === '' && unpushed === 0) {
    log.log(`nothing to save in ${repo}: no uncommitted change, no unpushed commit`);
    return { outcome: 'nothing-to-save', repository };
  }

  let commit = head!;
  if (changes !== '') {
    const gitDir = (await git(['-C', repo, 'rev-parse', '--absolute-git-dir'], options)).stdout.trim();
    const index = path.join(gitDir, `ide-cloud-save-${randomBytes(4).toString('hex')}.index`);
    const name =
      values.GIT_USER ?? (await optional(['-C', repo, 'config', 'user.name'], options)) ?? 'IDE Cloud session';
    const email =
      values.GIT_MAIL ?? (await optional(['-C', repo, 'config', 'user.email'], options)) ?? 'ide-cloud@localhost';
    const env = {
      ...(options.env ?? process.env),
      GIT_INDEX_FILE: index,
      GIT_AUTHOR_NAME: name,
      GIT_AUTHOR_EMAIL: email,
      GIT_COMMITTER_NAME: name,
      GIT_COMMITTER_EMAIL: email,
    };
    const onIndex = { ...options, env };
    try {
      await git(['-C', repo, 'read-tree', ...(head ? [head] : ['--empty'])], onIndex);
      await git(['-C', repo, 'add', '--all'], onIndex);
      const tree = (await git(['-C', repo, 'write-tree'], onIndex)).stdout.trim();
      const message = 'Work saved by IDE Cloud before the session stopped';
      commit = (
        await git(['-C', repo, 'commit-tree', tree, ...(head ? ['-p', head] : []), '-m', message], onIndex)
      ).stdout.trim();
    } finally {
      await rm(index, { force: true });
    }
  }

  const branch = savedBranchName(options.now ?? new Date());
  const credential = await pushCredential(repo, remote, options);
  const env = { ...(options.env ?? process.env) };
  const helpers: string[] = [];
  if (credential) {
    // An empty helper list first: the clone's own helpers (the credential cache) must not store it.
    helpers.push('-c', 'credential.helper=', '-c', `credential.helper=${ENVIRONMENT_CREDENTIAL_HELPER}`);
    env.IDE_CLOUD_GIT_USERNAME = credential.username;
    env.IDE_CLOUD_GIT_PASSWORD = credential.password;
  }
  log.log(`pushing the work to branch ${branch} of ${repository}…`);
  const secrets = [values.PLATFORM_TOKEN, credential?.password];
  try {
    await git(['-C', repo, ...helpers, 'push', '--quiet', '--', repository, `${commit}:refs/heads/${branch}`], {
      ...options,
      env,
      secrets,
    });
  } catch (error) {
    throw classifyPushError(error, repository);
  }
  log.log(`saved: branch ${branch} of ${repository}`);
  return { outcome: 'saved', branch, repository, commit };
}
