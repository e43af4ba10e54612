// Helpers of the landing-page browser suites: the app list, a recorder of the page's screens and steps,
// and a log sink.
import { Writable } from 'node:stream';
import type { Browser, Page } from 'playwright-core';
import type { LandingApp } from '../../server/src/landing/params.js';
import { loopbackContext } from './browser.js';

export const LANDING_APPS: LandingApp[] = [
  { name: 'python-latest', label: 'Python', buildSystems: [] },
  {
    name: 'java-17-templates-latest',
    label: 'Java 17',
    buildSystems: [
      { id: 'maven', label: 'Maven' },
      { id: 'gradle', label: 'Gradle' },
    ],
  },
  // offered by the page but not installed in the cluster: the service answers 473
  { name: 'rust-latest', label: 'Rust', buildSystems: [] },
  // installed with more CPU than the local node has: its pods are never scheduled, so it stays starting
  { name: 'ocaml-latest', label: 'OCaml', buildSystems: [] },
];

export interface PageReport {
  href: string;
  screen?: string;
  steps: string;
  failure?: string;
}

/** Records every change of the page's screen, steps and address (survives navigations). */
export async function recordReports(page: Page): Promise<PageReport[]> {
  const reports: PageReport[] = [];
  await page.exposeFunction('__landingReport', (report: PageReport) => {
    reports.push(report);
  });
  // A string, not a function: tsx would add its own helpers to a function's source, unknown in the page.
  await page.addInitScript(`
    (() => {
      const report = () => {
        const body = document.body;
        if (!body || !body.dataset.screen) return;
        window.__landingReport({
          href: location.href,
          screen: body.dataset.screen,
          steps: body.dataset.steps || '',
          failure: body.dataset.failure,
        });
      };
      document.addEventListener('DOMContentLoaded', () => {
        report();
        new MutationObserver(report).observe(document.body, { attributes: true });
      });
    })();
  `);
  return reports;
}

export function logSink(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { lines, stream };
}

/** The operator's session host; the browser's requests to it are answered in the browser (no network). */
export const SESSION_HOST = 'ide.localtest.me';
export const SESSION_ORIGIN = `http://${SESSION_HOST}`;
/** The URL of a session on the session host: its name, then its URL key (server/src/operator/manifests.ts). */
export function sessionUrlPattern(sessionName: string, origin = SESSION_ORIGIN): RegExp {
  return new RegExp(`^${origin.replace(/[.]/g, '\\.')}/${sessionName}/[0-9a-f]{32}/$`);
}
export const SESSION_PAGE = '<!doctype html><title>IDE session</title><h1>IDE session</h1>';

/** A loopback-only browser context in which the session host answers SESSION_PAGE (its visits into `visited`). */
export function sessionHostContext(browser: Browser, visited: string[] = []) {
  return loopbackContext(browser, { hosts: [SESSION_HOST], answer: SESSION_PAGE, visited });
}
