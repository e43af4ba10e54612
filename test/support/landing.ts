// Helpers of the landing-page browser suites: the app list, a recorder of the page's screens and steps,
// a log sink, and a fix-up of the local control plane's node taint.
import { Writable } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import type { Page } from 'playwright-core';
import type { LandingApp } from '../../server/src/landing/params.js';

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
export const SESSION_PAGE = '<!doctype html><title>IDE session</title><h1>IDE session</h1>';

/**
 * The API server taints a new node node.kubernetes.io/not-ready; the node lifecycle controller that
 * would lift it once the node is Ready is off on the local control plane (kwok keeps no lease). Lift it
 * here when it is still there, so session pods can be scheduled.
 */
export async function liftNotReadyTaint(kc: k8s.KubeConfig): Promise<void> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  for (const node of (await core.listNode()).items) {
    const taints = node.spec?.taints ?? [];
    const kept = taints.filter((t) => t.key !== 'node.kubernetes.io/not-ready');
    if (kept.length === taints.length) continue;
    const ready = node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
    if (!ready) continue;
    await core.patchNode(
      { name: node.metadata!.name!, body: [{ op: 'replace', path: '/spec/taints', value: kept }] },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.JsonPatch),
    );
  }
}
