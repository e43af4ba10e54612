// Headless Debian Chromium through playwright-core for page tests, kept on loopback: every request to
// a host other than 127.0.0.1/localhost is aborted (this machine allows no other traffic anyway).
// Chromium comes from the Debian package the VS Code host installer sets up (scripts/vscode-host).
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { CHROMIUM_PATH, ensureAptPackages } from '../../scripts/vscode-host/install.js';
import { CHROMIUM_ARGS } from './vscode-host.js';

export const ARTIFACTS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'test-artifacts');

export function isLoopback(url: string): boolean {
  try {
    const { protocol, hostname } = new URL(url);
    if (protocol === 'data:' || protocol === 'about:' || protocol === 'blob:') return true;
    return hostname === '127.0.0.1' || hostname === 'localhost' || hostname === '[::1]';
  } catch {
    return false;
  }
}

/** `extraArgs`: Chromium flags beyond the usual ones (e.g. `--host-resolver-rules`). */
export async function launchBrowser(extraArgs: string[] = []): Promise<Browser> {
  // Any suite may be the first to need a browser: install Debian's chromium when it is missing.
  if (!existsSync(CHROMIUM_PATH)) await ensureAptPackages();
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: [...CHROMIUM_ARGS, ...extraArgs] });
}

/**
 * A fresh context whose requests to non-loopback hosts are aborted and recorded in `blocked`. Requests
 * to `standIns` hosts (e.g. the operator's session host) never leave the browser either: they are
 * answered by `answer` and recorded in `visited`.
 */
export async function loopbackContext(
  browser: Browser,
  standIns: { hosts: string[]; answer: string; visited: string[] } = { hosts: [], answer: '', visited: [] },
): Promise<{ context: BrowserContext; blocked: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1000, height: 760 } });
  const blocked: string[] = [];
  await context.route('**/*', (route) => {
    const url = route.request().url();
    if (standIns.hosts.includes(new URL(url).host)) {
      standIns.visited.push(url);
      return route.fulfill({ status: 200, contentType: 'text/html', body: standIns.answer });
    }
    if (isLoopback(url)) return route.continue();
    blocked.push(url);
    return route.abort('blockedbyclient');
  });
  return { context, blocked };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  await mkdir(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** The names the VS Code workbench's explorer shows at the workspace folder's top level. */
export function explorerNames(page: Page): Promise<string[]> {
  return page.locator('.explorer-folders-view .monaco-list-row .label-name').allTextContents();
}

/**
 * The error pages (status 400 or more of a page load) `context` meets on `host`, as `<status> <path>`
 * with a session URL's key masked: what a student would see after a session URL was handed over.
 */
export function errorPagesOn(context: BrowserContext, host: string): string[] {
  const pages: string[] = [];
  context.on('response', (response) => {
    const { hostname, pathname } = new URL(response.url());
    if (hostname === host && response.request().isNavigationRequest() && response.status() >= 400)
      pages.push(`${response.status()} ${pathname.replace(/\/[0-9a-f]{32}\//, '/<key>/')}`);
  });
  return pages;
}

/** What a student sees first in a VS Code workbench page, as firstScreen() reads it. */
export interface FirstScreen {
  /** Restricted Mode is shown: its status bar entry or its banner. */
  restricted: boolean;
  /** The editor tabs' labels, in order (a markdown preview is `Preview README.md`). */
  tabs: string[];
  /** The active editor tab's label, if any. */
  activeTab: string | undefined;
  /** A Welcome / Getting Started page is open (its tab or its editor). */
  welcome: boolean;
  /** A chat view or chat widget is on screen. */
  chatVisible: boolean;
  /** The workbench banner's text ('' when none). */
  banner: string;
}

/**
 * Reads the first screen of a VS Code (code-server) workbench page. Waits, within `timeoutMs`, for the
 * workbench to have started up (the performance mark VS Code sets once its last-phase contributions are
 * created: by then workspace trust is settled and shown), then reads; with `until`, reads again until
 * the reading satisfies it or the deadline passes, and returns the last reading either way so the
 * caller's assertion shows what was on screen.
 */
export async function firstScreen(
  page: Page,
  { timeoutMs = 60_000, until }: { timeoutMs?: number; until?: (screen: FirstScreen) => boolean } = {},
): Promise<FirstScreen> {
  const deadline = Date.now() + timeoutMs;
  await page.waitForFunction(
    () => performance.getEntriesByName('code/didCreateWorkbenchContributions/4').length > 0,
    undefined,
    { timeout: timeoutMs },
  );
  for (;;) {
    const screen = await readFirstScreen(page);
    if (!until || until(screen) || Date.now() >= deadline) return screen;
    await page.waitForTimeout(250);
  }
}

// The reading runs in the page as plain source: a compiled function would carry the test loader's helpers
// (esbuild's __name), which the page does not have.
const READ_FIRST_SCREEN = `(() => {
  const visible = (element) => {
    const box = element.getBoundingClientRect();
    return box.width > 0 && box.height > 0;
  };
  const label = (tab) => (tab.querySelector('.label-name')?.textContent ?? '').trim();
  const tabs = [...document.querySelectorAll('.part.editor .tabs-container .tab')];
  const names = tabs.map(label);
  const active = tabs.find((tab) => tab.classList.contains('active'));
  const banner = (document.querySelector('.part.banner')?.textContent ?? '').trim();
  return {
    restricted: !!document.querySelector('[id="status.workspaceTrust"]') || /Restricted Mode/.test(banner),
    tabs: names,
    activeTab: active ? label(active) : undefined,
    welcome:
      names.some((name) => /^(Welcome|Getting Started|Walkthrough)\\b/.test(name)) ||
      [...document.querySelectorAll('.gettingStartedContainer')].some(visible),
    chatVisible: [
      ...document.querySelectorAll('[id="workbench.panel.chat"], .chat-viewpane, .interactive-session, .chat-widget'),
    ].some(visible),
    banner,
  };
})()`;

function readFirstScreen(page: Page): Promise<FirstScreen> {
  return page.evaluate(READ_FIRST_SCREEN) as Promise<FirstScreen>;
}

/** Resolves once some frame of `page` (a webview, such as a markdown preview) shows `text`; throws after `timeoutMs`. */
export async function waitForFrameText(page: Page, text: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const texts = await Promise.all(
      page.frames().map((f) => f.evaluate(() => document.body?.innerText ?? '').catch(() => '')),
    );
    if (texts.some((t) => t.includes(text))) return;
    if (Date.now() >= deadline)
      throw new Error(`no frame shows "${text}" within ${timeoutMs} ms (frames: ${page.frames().length})`);
    await page.waitForTimeout(250);
  }
}
