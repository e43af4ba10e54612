// What a student's browser meets between the click on "open in IDE" and the repository's files in the
// explorer, read from the browser's own events (Playwright's request, response and load events, the
// workbench's paint timing) and, for the clone, from the session's log. Times are ms after the click.
import type { Page } from 'playwright-core';

/** The cases of the click-to-code scenario (scenarios/click-to-code.ts). */
export type CaseName = 'warmWorkspace' | 'warmEphemeral' | 'lazy' | 'relaunch' | 'together';
export const CASES: Record<CaseName, string> = {
  warmWorkspace: 'warm, a new workspace (deep link)',
  warmEphemeral: "warm, ephemeral (the platform's API, then the URL)",
  lazy: 'lazy, the image on the node (deep link)',
  relaunch: 'a relaunch of an existing workspace (deep link)',
  together: 'students clicking at once (warm, deep link)',
};

/** The steps of a timeline, in order, as ms after the click. */
export const CLICK_STEPS = [
  ['providerAskedMs', 'the provider asked (sign-in)'],
  ['signInReturnedMs', "back at the landing page with the provider's code"],
  ['landingLoadedMs', 'landing page loaded'],
  ['launchSentMs', 'signed in: launch sent'],
  ['sessionCreatedMs', 'Session created (watch)'],
  ['firstStatusMs', "the operator's first status (watch)"],
  ['routeWrittenMs', 'path in the Ingress (watch)'],
  ['podCreatedMs', "a lazy start: the session's pod created (watch)"],
  ['podScheduledMs', '… bound to the node (watch)'],
  ['containersRunningMs', '… its containers running (watch)'],
  ['ideListeningMs', '… code-server listening (its log)'],
  ['podReadyMs', '… the pod Ready (watch): what the operator waits for'],
  ['urlWrittenMs', 'URL in its status (watch)'],
  ['launchAnsweredMs', 'launch answered'],
  ['firstSessionRequestMs', 'first request to the session host'],
  ['workbenchFirstByteMs', "workbench's first byte"],
  ['workbenchScriptMs', 'workbench.js downloaded'],
  ['workbenchFirstPaintMs', "workbench's first paint"],
  ['workbenchStartedMs', 'workbench started (its mark)'],
  ['explorerResolvedMs', 'explorer resolved (its mark)'],
  ['cloneDoneMs', 'clone done (agent)'],
  ['filesShownMs', 'files shown'],
] as const;

/** One launch, as the student's browser lived it (ms after the click; absent: not reached). */
export interface ClickTimeline {
  /** The landing page sent the browser to the provider: its sign-in round trip begins. */
  providerAskedMs?: number;
  /** The landing page asked again with the provider's answer (its `code`): the round trip's end. */
  signInReturnedMs?: number;
  /** The landing page's load after the sign-in round trip (the first page leaves for the provider before its load). */
  landingLoadedMs?: number;
  /** The landing page's POST api/launch sent: the student is signed in (the landing page's round trip done). */
  launchSentMs?: number;
  /** The service's Session create, as the bench's watch first saw it: the service's part before the operator's. */
  sessionCreatedMs?: number;
  /** The operator's first status write (conditions), as the bench's watch first saw it: the URL's, or one before it. */
  firstStatusMs?: number;
  /** The session's path in an Ingress, as the bench's watch first saw it: the operator's route write. */
  routeWrittenMs?: number;
  /** A lazy start's pod (the session's own), as the bench's watch first saw it: created, bound, its containers running, Ready. */
  podCreatedMs?: number;
  podScheduledMs?: number;
  containersRunningMs?: number;
  /** code-server's line saying it listens, from the session's log (a lazy start's pod). */
  ideListeningMs?: number;
  podReadyMs?: number;
  /** The operator's status write carrying the URL, as the bench's watch first saw it. */
  urlWrittenMs?: number;
  /** The landing page's POST api/launch answered (or the platform's POST /service, without a landing page). */
  launchAnsweredMs?: number;
  /** The browser's first request to the session host: the hand-over. */
  firstSessionRequestMs?: number;
  /** The first successful (2xx) page answer of the session host: the workbench's first byte. */
  workbenchFirstByteMs?: number;
  /** The workbench's first contentful paint. */
  workbenchFirstPaintMs?: number;
  /** workbench.js downloaded (its resource timing's responseEnd). */
  workbenchScriptMs?: number;
  /** The workbench's own mark `code/didStartWorkbench`: its script ran, its parts are created. */
  workbenchStartedMs?: number;
  /** The workbench's own mark `code/didResolveExplorer`: the work folder's listing came back. */
  explorerResolvedMs?: number;
  /** The explorer shows the repository's top level. */
  filesShownMs?: number;
  /** The agent's line saying the clone was done (or found already there), from the session's log. */
  cloneDoneMs?: number;
  /** Page answers of the session host after the hand-over with status ≥ 400 (`<status> <path>`). */
  errorPages: string[];
  /** Page answers of the session host that redirected (3xx): sign-in round trips. */
  sessionRedirects: number;
  /** Pages of the identity provider after the hand-over (a sign-in; more than one is a loop). */
  signInPagesAfterHandOver: number;
  /**
   * Origins asked besides the course's hosts (session, landing page, provider), once each: the
   * student's context intercepts nothing, as a student's browser does not. The IDE asks its extension
   * gallery; its webviews' resource origins (vscode-cdn.net) are answered inside the browser.
   */
  otherOrigins: string[];
  /** Why the explorer never showed the files, for a launch that failed. */
  failure?: string;
}

/**
 * Follows `page` from the click: call before the navigation, then `click()` right before it, and
 * `finish()` once the files are shown.
 */
export function followPage(
  page: Page,
  hosts: { session: string; landing: string; provider: string },
): { click(): void; filesShown(): void; timeline(): ClickTimeline; clickedAt(): number } {
  let clicked = 0;
  const at = () => Date.now() - clicked;
  const t: ClickTimeline = { errorPages: [], sessionRedirects: 0, signInPagesAfterHandOver: 0, otherOrigins: [] };
  page.on('request', (request) => {
    if (!clicked) return;
    const url = new URL(request.url());
    if (request.method() === 'POST' && url.hostname === hosts.landing && url.pathname.endsWith('/api/launch'))
      t.launchSentMs ??= at();
    if (request.isNavigationRequest() && url.host === hosts.provider && t.firstSessionRequestMs === undefined)
      t.providerAskedMs ??= at();
    if (request.isNavigationRequest() && url.hostname === hosts.landing && url.searchParams.has('code'))
      t.signInReturnedMs ??= at();
    if (url.hostname === hosts.session) t.firstSessionRequestMs ??= at();
    else if (
      /^https?:$/.test(url.protocol) &&
      url.hostname !== hosts.landing &&
      url.host !== hosts.provider &&
      !t.otherOrigins.includes(url.origin)
    )
      t.otherOrigins.push(url.origin);
  });
  page.on('response', (response) => {
    if (!clicked) return;
    const request = response.request();
    const url = new URL(response.url());
    if (request.method() === 'POST' && url.hostname === hosts.landing && url.pathname.endsWith('/api/launch'))
      t.launchAnsweredMs ??= at();
    if (!request.isNavigationRequest()) return;
    const status = response.status();
    if (url.hostname === hosts.session) {
      if (status >= 400) t.errorPages.push(`${status} ${url.pathname.replace(/\/[0-9a-f]{32}\//, '/<key>/')}`);
      else if (status >= 300) t.sessionRedirects++;
      else t.workbenchFirstByteMs ??= at();
    } else if (url.host === hosts.provider && t.firstSessionRequestMs !== undefined) t.signInPagesAfterHandOver++;
  });
  page.on('load', () => {
    if (clicked && new URL(page.url()).hostname === hosts.landing) t.landingLoadedMs ??= at();
  });
  return {
    click: () => void (clicked = Date.now()),
    clickedAt: () => clicked,
    filesShown: () => void (t.filesShownMs = at()),
    timeline: () => t,
  };
}

/**
 * Resolves once the explorer of the workbench in `page` shows every name of `names` at its top level.
 * The page may still be on its way there (the landing page, the sign-in): a navigation in between
 * starts the wait again on the new document, within the one deadline.
 */
export async function waitForFiles(page: Page, names: readonly string[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = deadline - Date.now();
    if (left <= 0) throw new Error(`the explorer did not show ${names.join(', ')} within ${timeoutMs} ms`);
    try {
      await page.waitForFunction(
        (wanted) => {
          const shown = Array.from(
            document.querySelectorAll('.explorer-folders-view .monaco-list-row .label-name'),
            (e) => e.textContent,
          );
          return wanted.every((n) => shown.includes(n));
        },
        names,
        { timeout: left, polling: 'raf' },
      );
      return;
    } catch (error) {
      const message = (error as Error).message;
      if (!/context was destroyed|navigat|Target closed|frame was detached/i.test(message)) throw error;
    }
  }
}

/** The workbench's first contentful paint, as ms since the epoch (undefined before it painted). */
export function firstPaint(page: Page): Promise<number | undefined> {
  return page.evaluate(() => {
    const [paint] = performance.getEntriesByName('first-contentful-paint');
    return paint ? performance.timeOrigin + paint.startTime : undefined;
  });
}

/** The workbench's own load, as ms since the epoch: workbench.js downloaded, the workbench started, the explorer resolved. */
export function workbenchMarks(
  page: Page,
): Promise<{ workbenchScript?: number; workbenchStarted?: number; explorerResolved?: number }> {
  // No function declared inside: the page gets the source as written (tsx would name one with a helper).
  return page.evaluate(() => {
    const script = performance.getEntriesByType('resource').find((e) => e.name.endsWith('/workbench/workbench.js')) as
      PerformanceResourceTiming | undefined;
    const [started] = performance.getEntriesByName('code/didStartWorkbench');
    const [resolved] = performance.getEntriesByName('code/didResolveExplorer');
    return {
      workbenchScript: script ? performance.timeOrigin + script.responseEnd : undefined,
      workbenchStarted: started ? performance.timeOrigin + started.startTime : undefined,
      explorerResolved: resolved ? performance.timeOrigin + resolved.startTime : undefined,
    };
  });
}

/** When the agent's clone line was logged (ms since the epoch), from a log read with timestamps. */
export function cloneDoneAt(timestampedLog: string): number | undefined {
  return loggedAt(
    timestampedLog,
    (l) => l.includes('done: repository cloned') || l.includes('already holds this repository'),
  );
}

/** When code-server logged that it listens (ms since the epoch), from a log read with timestamps. */
export function ideListeningAt(timestampedLog: string): number | undefined {
  return loggedAt(timestampedLog, (l) => / HTTP server listening on /.test(l));
}

/** When the first line `matches` was logged (ms since the epoch), from a log read with timestamps. */
function loggedAt(timestampedLog: string, matches: (line: string) => boolean): number | undefined {
  const line = timestampedLog.split('\n').find(matches);
  // `2026-11-26T08:10:00.123456789Z …`: Date.parse takes milliseconds, not nanoseconds.
  const stamp = line?.split(' ')[0]?.replace(/(\.\d{3})\d*Z$/, '$1Z');
  const ms = stamp ? Date.parse(stamp) : NaN;
  return Number.isFinite(ms) ? ms : undefined;
}
