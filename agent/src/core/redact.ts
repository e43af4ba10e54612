// Secrets never reach a log line or an error message (DESIGN.md "Secrets"): URLs lose their
// `user:pass@`, and known secret values are replaced wherever they appear.

// Userinfo never holds raw `<>`, so placeholders like `https://<user>:<token>@host` stay readable.
const URL_USERINFO = /\b([a-z][a-z0-9+.-]*:\/\/)[^/@\s'"<>]*@/gi;

/** Removes `user:password@` from every URL in the text. */
export function redactUrls(text: string): string {
  return text.replace(URL_USERINFO, '$1');
}

/** The URL without its credentials; `stripCredentials` in server/src/model/names.ts is the same rule. */
export function stripCredentials(uri: string): string {
  return uri.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/@]*@/i, '$1');
}

/** The secret parts of a URL's userinfo (the password, raw and decoded), for redaction lists. */
export function credentialsOf(uri: string | undefined): string[] {
  const match = /^[a-z][a-z0-9+.-]*:\/\/[^/@:]*:([^/@]*)@/i.exec(uri ?? '');
  if (!match?.[1]) return [];
  let decoded = match[1];
  try {
    decoded = decodeURIComponent(match[1]);
  } catch {
    // not percent-encoded
  }
  return [...new Set([match[1], decoded])];
}

/** True when the URL carries `user[:password]@`. */
export function hasCredentials(uri: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\/[^/@]*@/i.test(uri);
}

/**
 * Redacts credentialed URLs and every given secret value (also its URL-encoded form, as git prints it)
 * from a text. Values shorter than 4 characters are not searched for: they would mangle ordinary text.
 */
export function redact(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = redactUrls(text);
  for (const secret of secrets) {
    if (!secret || secret.length < 4) continue;
    for (const form of new Set([secret, encodeURIComponent(secret)])) {
      out = out.split(form).join('***');
    }
  }
  return out;
}
