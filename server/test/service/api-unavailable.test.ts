import assert from 'node:assert/strict';
import type { CustomResourceClient } from '../../src/kube/resources.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../../src/kube/client.js';
import { loadOperatorConfig } from '../../src/operator/config.js';
import { loadServiceConfig } from '../../src/service/config.js';
import { API_SERVER_RETRY_AFTER_SECONDS, ApiError, ApiServerUnavailable } from '../../src/service/errors.js';
import { ServiceResource } from '../../src/service/resources.js';

const SECRET = 'PLATFORM_TOKEN=secret-value';

/** A session client whose every call rejects with `error`. */
function rejecting(error: unknown): ServiceResource<'session'> {
  const fail = () => Promise.reject(error);
  const client = { find: fail, create: fail, delete: fail, jsonPatch: fail, patchStatus: fail };
  return new ServiceResource(client as unknown as CustomResourceClient<'session'>, 'session');
}

async function answerOf(call: Promise<unknown>): Promise<ApiError> {
  const error = await call.then(
    () => assert.fail('the call did not fail'),
    (e: unknown) => e,
  );
  assert.ok(error instanceof ApiError, 'an ApiError');
  return error;
}

describe('service: an API server that does not answer', () => {
  it('answers 503 with Retry-After when a call passed its deadline, never the client’s message', async () => {
    const aborted = Object.assign(new Error(`The user aborted a request. ${SECRET}`), {
      name: 'AbortError',
      type: 'aborted',
    });
    for (const call of [
      rejecting(aborted).delete('s'),
      rejecting(aborted).find('s'),
      rejecting(aborted).create({ metadata: {}, spec: { user: 'u', appDefinition: 'a' } }),
    ]) {
      const answer = await answerOf(call);
      assert.ok(answer instanceof ApiServerUnavailable);
      assert.deepEqual(answer.body, {
        code: 503,
        reason: 'the Kubernetes API server did not answer in time; retry later',
      });
      assert.deepEqual(answer.headers, { 'Retry-After': String(API_SERVER_RETRY_AFTER_SECONDS) });
      assert.ok(!JSON.stringify(answer.body).includes('secret-value'));
    }
  });

  it('answers 503 with Retry-After when the API server cannot be reached', async () => {
    const refused = Object.assign(new Error(`connect ECONNREFUSED ${SECRET}`), {
      name: 'FetchError',
      type: 'system',
      code: 'ECONNREFUSED',
    });
    const answer = await answerOf(rejecting(refused).delete('s'));
    assert.deepEqual(answer.body, { code: 503, reason: 'the Kubernetes API server is not reachable; retry later' });
    assert.deepEqual(answer.headers, { 'Retry-After': String(API_SERVER_RETRY_AFTER_SECONDS) });
  });

  it('reads the deadline from IDE_CLOUD_API_REQUEST_TIMEOUT_MS, 10 s by default, in service and operator', () => {
    const tokens = { SERVICE_AUTH_TOKEN: 'a'.repeat(8), ADMIN_API_TOKEN: 'b'.repeat(8) };
    assert.equal(DEFAULT_REQUEST_TIMEOUT_MS, 10_000);
    assert.equal(loadServiceConfig(tokens).apiRequestTimeoutMs, 10_000);
    assert.equal(loadServiceConfig({ ...tokens, IDE_CLOUD_API_REQUEST_TIMEOUT_MS: '2500' }).apiRequestTimeoutMs, 2500);
    assert.throws(
      () => loadServiceConfig({ ...tokens, IDE_CLOUD_API_REQUEST_TIMEOUT_MS: '10' }),
      /IDE_CLOUD_API_REQUEST_TIMEOUT_MS must be >= 100/,
    );
    assert.equal(loadOperatorConfig({}).apiRequestTimeoutMs, 10_000);
    assert.equal(loadOperatorConfig({ IDE_CLOUD_API_REQUEST_TIMEOUT_MS: '2500' }).apiRequestTimeoutMs, 2500);
    assert.throws(() => loadOperatorConfig({ IDE_CLOUD_API_REQUEST_TIMEOUT_MS: 'soon' }), /apiRequestTimeoutMs/);
  });
});
