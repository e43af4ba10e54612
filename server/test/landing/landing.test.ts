import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { LandingConfigError, loadLandingConfig } from '../../src/landing/config.js';
import { messageFor, PROGRESS_STEPS, stepIndex, stepOf } from '../../src/landing/messages.js';
import { buildClientBundle } from '../../src/landing/bundle.js';
import { inlineScript, renderPage, scriptJson } from '../../src/landing/page.js';
import { createLandingApp } from '../../src/landing/server.js';
import { listen } from '../../src/http/listen.js';
import { launchTarget } from '../../src/landing/service-client.js';

describe('landing page: human messages', () => {
  it('has its own message for 473, 551, 552, 553, maintenance and network loss', () => {
    const titles = [
      messageFor({ kind: 'status', code: 473 }),
      messageFor({ kind: 'status', code: 551 }),
      messageFor({ kind: 'status', code: 552 }),
      messageFor({ kind: 'status', code: 553 }),
      messageFor({ kind: 'maintenance' }),
      messageFor({ kind: 'network' }),
    ].map((m) => m.title);
    assert.equal(new Set(titles).size, titles.length);
    assert.match(messageFor({ kind: 'status', code: 553 }).text, /Close another IDE/);
    assert.equal(messageFor({ kind: 'status', code: 551 }).retry, true);
    assert.equal(messageFor({ kind: 'status', code: 473 }).retry, false);
  });

  it('falls back by class: gateway errors read as maintenance, other 5xx and 4xx generically', () => {
    assert.deepEqual(messageFor({ kind: 'status', code: 503 }), messageFor({ kind: 'maintenance' }));
    assert.match(messageFor({ kind: 'status', code: 599 }).title, /went wrong/);
    assert.match(messageFor({ kind: 'status', code: 418 }).title, /refused/);
  });
});

describe('landing page: progress steps', () => {
  it('maps phase and conditions to the furthest step', () => {
    assert.equal(stepOf({}), 'created');
    assert.equal(stepOf({ phase: 'Pending' }), 'created');
    assert.equal(stepOf({ phase: 'Starting' }), 'starting');
    assert.equal(stepOf({ phase: 'Pending', conditions: [{ type: 'Reserved', status: 'True' }] }), 'starting');
    assert.equal(stepOf({ phase: 'Starting', conditions: [{ type: 'Routed', status: 'True' }] }), 'routed');
    assert.equal(stepOf({ phase: 'Starting', conditions: [{ type: 'Routed', status: 'Unknown' }] }), 'starting');
    assert.equal(stepOf({ phase: 'Running', url: 'http://x/' }), 'ready');
    assert.equal(stepOf({ phase: 'Running' }), 'starting');
  });

  it('orders the steps', () => {
    assert.deepEqual(
      PROGRESS_STEPS.map((s) => stepIndex(s.id)),
      [0, 1, 2, 3, 4],
    );
  });
});

describe('landing page: page and names', () => {
  it('embeds posted parameters so that no value can close the script element', () => {
    const html = renderPage({ posted: { platformToken: '</script><script>alert(1)</script>' } });
    assert.ok(!html.includes('</script><script>alert(1)'));
    assert.equal(JSON.parse(scriptJson('a</script>\u2028')), 'a</script>\u2028');
  });

  it('uses the DESIGN.md workspace name, the same with or without credentials in gitUri', () => {
    const a = launchTarget('python-latest', 'alice@example.com', 'https://u:one@git.example.org/course/repo.git');
    const b = launchTarget('python-latest', 'alice@example.com', 'https://u:two@git.example.org/course/repo.git');
    assert.deepEqual(a, b);
    // Name format (issue 15, item 10): parts of 10 and an owner tag; the session name keeps the whole workspace name.
    assert.match(a.workspaceName, /^ws-python-lat-repo-alice-exam-[0-9a-f]{8}-[0-9a-f]{16}$/);
    assert.equal(a.sessionName, `session-${a.workspaceName}`);
  });
});

describe('landing page: configuration', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'landing-config-'));
  const apps = path.join(dir, 'apps.json');
  writeFileSync(
    apps,
    JSON.stringify([{ name: 'c-templates-latest', label: 'C', buildSystems: [{ id: 'make', label: 'Make' }] }]),
  );
  const base = { SERVICE_URL: 'http://service/', SERVICE_AUTH_TOKEN: 'a-service-token', LANDING_PAGE_APPS_FILE: apps };

  it('reads the chart variables', () => {
    const config = loadLandingConfig({
      ...base,
      PORT: '9000',
      IDENTITY_PROVIDER_ISSUER: 'https://idp.example.org/realms/x',
    });
    assert.equal(config.serviceUrl, 'http://service');
    assert.equal(config.port, 9000);
    assert.deepEqual(config.apps, [
      { name: 'c-templates-latest', label: 'C', buildSystems: [{ id: 'make', label: 'Make' }] },
    ]);
    assert.equal(config.identityProvider?.issuer, 'https://idp.example.org/realms/x');
    assert.equal(config.identityProvider?.clientId, 'ide-cloud-landing-page');
    assert.equal(config.identityProvider?.scope, 'openid email profile');
    assert.equal(config.identityProvider?.resource, undefined);
    assert.equal(loadLandingConfig({ ...base, IDENTITY_PROVIDER_ISSUER: 'disabled' }).identityProvider, undefined);
  });

  it('fails fast naming the variable, never printing the token', () => {
    assert.throws(
      () => loadLandingConfig({ ...base, SERVICE_AUTH_TOKEN: 'short' }),
      (e: Error) => {
        assert.ok(e instanceof LandingConfigError);
        assert.match(e.message, /SERVICE_AUTH_TOKEN/);
        assert.ok(!e.message.includes('short'));
        return true;
      },
    );
    assert.throws(
      () => loadLandingConfig({ ...base, LANDING_PAGE_APPS_FILE: path.join(dir, 'none.json') }),
      /LANDING_PAGE_APPS_FILE/,
    );
    assert.throws(() => loadLandingConfig({ ...base, SERVICE_URL: 'not a url' }), /SERVICE_URL/);
    assert.throws(
      () => loadLandingConfig({ ...base, LANDING_PAGE_COOKIE_SECRET: 'too-short-a-cookie-secret' }),
      (e: Error) => {
        assert.match(e.message, /LANDING_PAGE_COOKIE_SECRET must be at least 32 characters/);
        assert.ok(!e.message.includes('too-short'));
        return true;
      },
    );
  });
});

describe('landing page: its script inline', () => {
  it('serves the bundle in the page, and a policy that admits exactly the bytes served', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'landing-inline-'));
    const apps = path.join(dir, 'apps.json');
    writeFileSync(apps, JSON.stringify([{ name: 'python-latest', label: 'Python' }]));
    const config = loadLandingConfig({
      SERVICE_URL: 'http://127.0.0.1:9/',
      SERVICE_AUTH_TOKEN: 'a-service-token',
      LANDING_PAGE_APPS_FILE: apps,
      IDENTITY_PROVIDER_ISSUER: 'disabled',
    });
    const script = await buildClientBundle();
    const app = createLandingApp(config, pino({ level: 'silent' }), script);
    const running = await listen(app, 0, '127.0.0.1');
    try {
      const response = await fetch(`${running.url}/`);
      const html = await response.text();
      const served = /<script>([^]*?)<\/script>/.exec(html)?.[1];
      assert.equal(served, script);
      const digest = createHash('sha256').update(served!, 'utf8').digest('base64');
      const policy = response.headers.get('content-security-policy') ?? '';
      assert.ok(policy.split('; ').includes(`script-src 'sha256-${digest}'`), policy);
      assert.equal((await fetch(`${running.url}/app.js`)).status, 404);
    } finally {
      await running.close();
    }
  });

  it('refuses a script that would end its element early or that the HTML parser would change', () => {
    for (const bad of ['let a = "</SCRIPT><script>alert(1)";', 'let a = "<!--";', 'let a = 1;\r\n', 'let a = "\0";'])
      assert.throws(() => inlineScript(bad), /cannot be inlined/, JSON.stringify(bad));
    assert.doesNotThrow(() => inlineScript('let a = 1 < 2;\n'));
  });
});
