// The landing page while its launch waits in the operator's lazy-start queue, in a real browser
// (Debian Chromium through playwright-core) against the real REST service, the real operator (lazy
// path, a slow gate; pods run through kwok) and the local control plane: the page shows the place in
// words instead of a timeout, launches again when the service's timeout ends while queued, and opens
// the IDE once the session runs.
import assert from 'node:assert/strict';
import type { BrowserContext } from 'playwright-core';
import { launchTarget } from '../../server/src/landing/index.js';
import { findCondition } from '../../server/src/model/conditions.js';
import { SESSION_ADMITTED_CONDITION } from '../../server/src/model/session.js';
import { screenshot } from '../support/browser.js';
import { SESSION_HOST, sessionUrlPattern, sessionHostContext } from '../support/landing.js';
import { appDefinitionSpec, createSession, provideVolume, waitForSession } from '../support/operator.js';
import { useStack } from '../support/stack.js';

describe('landing page: a launch waiting in the lazy-start queue (real browser, service and operator)', function () {
  this.timeout(240_000);
  let context: BrowserContext;
  let blocked: string[];

  const stack = useStack('landing-queue', {
    apps: [appDefinitionSpec('python-latest')],
    // One lazy start every 10 s; the service's launch timeout (5 s) ends while the launch is queued.
    operator: {
      eagerStart: false,
      sessionHost: SESSION_HOST,
      sessionScheme: 'http',
      lazyStartsPerSecond: 0.1,
      lazyStartBurst: 1,
    },
    service: { launchTimeoutMinutes: 5 / 60 },
    landing: {},
    browser: true,
  });
  before(async () => {
    ({ context, blocked } = await sessionHostContext(stack.browser));
  });
  stack.cleanUp(() => context?.close());

  it('shows the place in the queue in words, launches again at the timeout, then opens the IDE', async () => {
    // The first session takes the one token: the page's launch waits about 10 s behind it.
    await createSession(stack.resources, 'session-before', {
      user: 'before@example.com',
      appDefinition: 'python-latest',
    });
    await waitForSession(
      stack.resources,
      'session-before',
      (s) => !!findCondition(s.status?.conditions, SESSION_ADMITTED_CONDITION),
    );

    const user = 'queued@example.com';
    const repo = 'https://git.example.test/course/exercise-1.git';
    const { workspaceName, sessionName } = launchTarget('python-latest', user, repo);
    await provideVolume(stack.kc, stack.namespace, workspaceName);
    const page = await context.newPage();
    const launches: number[] = [];
    page.on('response', (response) => {
      if (response.url().endsWith('/api/launch')) launches.push(response.status());
    });
    const link = new URLSearchParams({ appDef: 'python-latest', gitUri: repo, platformToken: 'ptok-queue', user });
    await page.goto(`${stack.landing.url}/?${link.toString()}`);

    await page.waitForSelector('body[data-queue="1"]', { timeout: 60_000 });
    assert.equal(
      await page.textContent('#progress-detail'),
      'Many IDEs are starting right now. You are next in line for yours, about 10 seconds to go; please keep this page open.',
    );
    await screenshot(page, 'landing-queued');

    await page.waitForURL(sessionUrlPattern(sessionName), { timeout: 120_000 });
    // The first launch ended with the service's timeout while queued; the page launched again.
    assert.equal(launches[0], 551);
    assert.equal(launches.at(-1), 200);
    assert.deepEqual(blocked, [], 'the page tried to reach a non-loopback host');
  });
});
