// Secrets never leave the service: a launch with credentials in gitUri, a PLATFORM_TOKEN and a secret
// env value; none of them (nor the auth token or the session secret) appears in the captured logs,
// the metrics, or any listing.
import assert from 'node:assert/strict';
import {
  BASE_APP,
  ADMIN_API_TOKEN,
  SERVICE_AUTH_TOKEN,
  call,
  operatorFillsStatus,
} from '../support/service-harness.js';
import { useStack } from '../support/stack.js';

const appId = SERVICE_AUTH_TOKEN;
const GIT_TOKEN = 'ghp_GitTokenInTheUri7731';
const GIT_URI = `https://student:${GIT_TOKEN}@git.example.test/course/exercise-1.git`;
const PLATFORM_TOKEN = 'platform-token-5c0ffee-91';
const SECRET_VALUE = 'an-env-secret-value-0042';

describe('service secrets stay out of logs, metrics and listings', function () {
  const stack = useStack('svc-secrets', { apps: [BASE_APP], service: { sessionsPerUser: 5 } });
  this.timeout(60_000);
  const user = 'secretive@example.com';
  const sessionSecrets: string[] = [];

  const env = {
    fromMap: {
      IDE: 'true',
      GIT_URI,
      GIT_USER: 'student',
      PLATFORM_TOKEN,
      PLATFORM_URL: 'https://lms.example.test',
      MY_SECRET: SECRET_VALUE,
    },
  };

  it('launches with secret values that do reach the Session spec', async () => {
    const answer = call(stack.service.url, 'POST', '/service', {
      body: { appId, user, appDefinition: 'python-latest', workspaceName: 'ws-secret', env },
    });
    const name = await operatorFillsStatus(stack.resources, (_n, spec) => spec.workspace === 'ws-secret');
    assert.equal((await answer).status, 200);
    const session = await stack.resources.sessions.get(name);
    assert.equal(session.spec.envVars?.GIT_URI, GIT_URI, 'the operator needs the values');
    sessionSecrets.push(session.spec.sessionSecret!);

    // A timed-out and a refused launch with the same values exercise the failure logs as well.
    const timedOut = await call(stack.service.url, 'POST', '/service', {
      body: { appId, user, appDefinition: 'python-latest', env, timeout: 0.01 },
    });
    assert.equal(timedOut.status, 551);
    const refused = await call(stack.service.url, 'POST', '/service', {
      body: { appId, user, appDefinition: 'python-latest', env: { ...env, fromConfigMaps: [GIT_URI] } },
    });
    assert.equal(refused.status, 400);
    assert.ok(!refused.text.includes(GIT_TOKEN), 'the error details do not echo the value');
    const wrongType = await call(stack.service.url, 'POST', '/service', {
      body: { appId, user, appDefinition: 'python-latest', env: { fromMap: { PLATFORM_TOKEN: [PLATFORM_TOKEN] } } },
    });
    assert.equal(wrongType.status, 400);
    assert.ok(!wrongType.text.includes(PLATFORM_TOKEN));
  });

  it('keeps them out of every listing, the metrics and the captured logs', async () => {
    const encodedUser = encodeURIComponent(user);
    const outputs = {
      sessions: (await call(stack.service.url, 'GET', `/service/session/${appId}/${encodedUser}`)).text,
      workspaces: (await call(stack.service.url, 'GET', `/service/workspace/${appId}/${encodedUser}`)).text,
      appDefinitions: (await call(stack.service.url, 'GET', `/service/appdefinition/${appId}`)).text,
      admin: (
        await call(stack.service.url, 'GET', '/service/admin/appdefinition', {
          headers: { 'x-admin-api-token': ADMIN_API_TOKEN },
        })
      ).text,
      metrics: (await call(stack.service.url, 'GET', '/q/metrics')).text,
      logs: stack.service.logs.join(''),
    };
    assert.match(outputs.sessions, /ws-secret/, 'the listing is not empty');
    assert.ok(stack.service.logs.length > 5, 'logs were captured');
    const secrets = [
      GIT_TOKEN,
      GIT_URI,
      PLATFORM_TOKEN,
      SECRET_VALUE,
      SERVICE_AUTH_TOKEN,
      ADMIN_API_TOKEN,
      ...sessionSecrets,
    ];
    for (const [where, text] of Object.entries(outputs)) {
      for (const secret of secrets) {
        assert.ok(!text.includes(secret), `${where} contains a secret (${secret.slice(0, 4)}…)`);
      }
    }
  });
});
