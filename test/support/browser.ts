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
