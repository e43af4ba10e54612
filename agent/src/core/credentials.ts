// Where a later `git push` gets its credential: the clone's token is handed to git's in-memory
// credential cache (`git credential-cache`, a per-user daemon; nothing on disk) for a bounded time, and
// the clone's own config names that helper. After the cache expires, a fresh token is needed: the
// participation clone run again on the same folder refreshes it.
import { git, type GitOptions } from './git.js';

/** Default lifetime of a remembered credential: a long session. SESSION_CREDENTIAL_CACHE_SECONDS overrides. */
export const CREDENTIAL_CACHE_SECONDS = 8 * 60 * 60;

export function credentialCacheSeconds(env: NodeJS.ProcessEnv = process.env): number {
  const value = Number(env.SESSION_CREDENTIAL_CACHE_SECONDS);
  return Number.isFinite(value) &&
    value >= 0 &&
    env.SESSION_CREDENTIAL_CACHE_SECONDS !== '' &&
    env.SESSION_CREDENTIAL_CACHE_SECONDS !== undefined
    ? Math.floor(value)
    : CREDENTIAL_CACHE_SECONDS;
}

/** The decoded user and password a URL carries, with where they are for, if it carries a password. */
export function urlCredential(
  uri: string,
): { protocol: string; host: string; username: string; password: string } | undefined {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return undefined;
  }
  if (!url.password) return undefined;
  return {
    protocol: url.protocol.replace(/:$/, ''),
    host: url.host,
    username: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
  };
}

/**
 * Remembers the user:password of a credentialed URL for the repository in `dir`: sets the clone's
 * `credential.helper` to the cache and stores the credential there. Does nothing for a URL without a
 * password or with `seconds` 0. Returns whether it stored one.
 */
export async function rememberCredential(
  uri: string,
  dir: string,
  options: GitOptions & { seconds?: number } = {},
): Promise<boolean> {
  const seconds = options.seconds ?? credentialCacheSeconds(options.env);
  const credential = urlCredential(uri);
  if (seconds <= 0 || !credential) return false;
  const helper = `cache --timeout=${seconds}`;
  const secrets = [...(options.secrets ?? []), credential.password, encodeURIComponent(credential.password)];
  await git(['-C', dir, 'config', '--local', '--replace-all', 'credential.helper', helper], { ...options, secrets });
  const input = [
    `protocol=${credential.protocol}`,
    `host=${credential.host}`,
    `username=${credential.username}`,
    `password=${credential.password}`,
    '',
    '',
  ].join('\n');
  await git(['-C', dir, 'credential', 'approve'], { ...options, secrets, input });
  return true;
}
