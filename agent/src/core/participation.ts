// The interactive clone of a learning-platform participation: authenticate with PLATFORM_TOKEN, obtain
// a short-lived participation token, clone with it in the URL, store the remote without it.
import { cloneIntoWorkspace, type CloneResult } from './clone.js';
import { rememberCredential } from './credentials.js';
import { AgentError, missingValue } from './errors.js';
import { git, type GitOptions } from './git.js';
import type { RedactingLog } from './log.js';
import { PlatformClient } from './platform.js';
import { stripCredentials } from './redact.js';

/**
 * Keys of a participation clone's local git config naming its participation, participant and the
 * repository it was cloned from (the only one a save sends the participation's token to).
 */
export const PARTICIPATION_CONFIG = {
  id: 'ide-cloud.participationId',
  participant: 'ide-cloud.participant',
  repository: 'ide-cloud.repository',
} as const;

/** `https://<participant>:<token>@host/path.git` from a repository URL (any credentials in it replaced). */
export function participationCloneUrl(repository: string, participant: string, token: string): string {
  let url: URL;
  try {
    url = new URL(stripCredentials(repository));
  } catch {
    throw new AgentError('GitFailed', 'the repository URL is not a valid URL', 'Give it as https://host/path.git');
  }
  url.username = encodeURIComponent(participant);
  url.password = encodeURIComponent(token);
  return url.toString();
}

export interface ParticipationCloneOptions extends GitOptions {
  credentialCacheSeconds?: number;
  platformUrl?: string;
  platformToken?: string;
  participationId: string;
  /** Repository URL of the participation; credentials in it are ignored. */
  repository: string;
  /** The participant's identifier on the git server (the user name in the clone URL). */
  participant?: string;
  dir: string;
  log: RedactingLog;
  fetch?: typeof fetch;
}

export async function cloneParticipation(options: ParticipationCloneOptions): Promise<CloneResult> {
  const { log } = options;
  if (!options.platformUrl) throw missingValue('PLATFORM_URL', 'Start the session from the learning platform');
  if (!options.platformToken) throw missingValue('PLATFORM_TOKEN', 'Start the session from the learning platform');
  if (!options.participant) throw missingValue('the participant', 'Give the participant (GIT_USER) for the clone');
  log.addSecret(options.platformToken);
  const platform = new PlatformClient({
    platformUrl: options.platformUrl,
    platformToken: options.platformToken,
    ...(options.fetch ? { fetch: options.fetch } : {}),
  });
  log.log(`requesting an access token for participation ${options.participationId} from ${platform.displayUrl}…`);
  const token = await platform.participationToken(options.participationId);
  log.addSecret(token);
  const url = participationCloneUrl(options.repository, options.participant, token);
  log.log(`cloning ${stripCredentials(url)} into ${options.dir}…`);
  const secrets = [options.platformToken, token];
  const result = await cloneIntoWorkspace(url, options.dir, { ...options, secrets });
  if (result.outcome !== 'other-repository') {
    // Where a later save of the student's work gets a fresh token from (core/save.ts); no secret.
    await git(['-C', options.dir, 'config', '--local', PARTICIPATION_CONFIG.id, options.participationId], options);
    await git(['-C', options.dir, 'config', '--local', PARTICIPATION_CONFIG.participant, options.participant], options);
    await git(
      ['-C', options.dir, 'config', '--local', PARTICIPATION_CONFIG.repository, stripCredentials(url)],
      options,
    );
  }
  if (result.outcome === 'already-present') {
    // The same repository is there already: the fresh token serves its next push instead.
    const stored = await rememberCredential(url, options.dir, {
      ...options,
      secrets,
      seconds: options.credentialCacheSeconds,
    });
    if (stored) log.log('the folder already holds this repository; its push credential was refreshed');
  }
  return result;
}
