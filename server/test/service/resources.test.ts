import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import type { CustomResourceClient } from '../../src/kube/resources.js';
import { ApiError, Conflict } from '../../src/service/errors.js';
import { ServiceResource } from '../../src/service/resources.js';

/** A client whose every call fails with the API server's answer `status` (its body quotes a secret). */
function failing<K extends 'session' | 'workspace' | 'appDefinition'>(status: number): CustomResourceClient<K> {
  const fail = () =>
    Promise.reject(
      new k8s.ApiException(
        status,
        'the API server said: envVars PLATFORM_TOKEN=secret-value',
        '{"reason":"Invalid"}',
        {},
      ),
    );
  return {
    path: '/apis/x',
    namespace: 'ns',
    kind: 'Session',
    find: fail,
    create: fail,
    delete: fail,
    jsonPatch: fail,
    patchStatus: fail,
  } as unknown as CustomResourceClient<K>;
}

async function answerOf(call: Promise<unknown>): Promise<ApiError> {
  try {
    await call;
  } catch (error) {
    assert.ok(error instanceof ApiError, 'an ApiError');
    return error;
  }
  throw new Error('the call did not fail');
}

describe('service: Kubernetes errors mapped at the boundary', () => {
  it('answers a 404 of a named object with its kind’s code: 474, 471, 473', async () => {
    const session = await answerOf(new ServiceResource(failing<'session'>(404), 'session').patchStatus('s', {}));
    assert.deepEqual(session.body, { code: 474, reason: 'unknown session' });
    const workspace = await answerOf(new ServiceResource(failing<'workspace'>(404), 'workspace').jsonPatch('w', []));
    assert.deepEqual(workspace.body, { code: 471, reason: 'unknown workspace' });
    const definition = await answerOf(
      new ServiceResource(failing<'appDefinition'>(404), 'appDefinition').jsonPatch('a', []),
    );
    assert.deepEqual(definition.body, { code: 473, reason: 'unknown app definition' });
  });

  it('keeps the old reasons: 409 a typed Conflict, 429 with Retry-After, 400/422 as 400, others 500', async () => {
    const sessions = (status: number) => new ServiceResource(failing<'session'>(status), 'session');
    const conflict = await answerOf(sessions(409).create({ metadata: {}, spec: { user: 'u', appDefinition: 'a' } }));
    assert.ok(conflict instanceof Conflict);
    assert.deepEqual(conflict.body, { code: 409, reason: 'creating the session was changed concurrently; retry' });
    const busy = await answerOf(sessions(429).find('s'));
    assert.equal(busy.code, 429);
    assert.deepEqual(busy.headers, { 'Retry-After': '1' });
    for (const status of [400, 422]) {
      const refused = await answerOf(
        sessions(status).create({ metadata: {}, spec: { user: 'u', appDefinition: 'a' } }),
      );
      assert.deepEqual(refused.body, { code: 400, reason: 'creating the session was refused by the API server' });
    }
    const failed = await answerOf(sessions(500).patchStatus('s', {}, 'recording activity'));
    assert.deepEqual(failed.body, { code: 500, reason: 'recording activity failed' });
    const created = await answerOf(sessions(404).create({ metadata: {}, spec: { user: 'u', appDefinition: 'a' } }));
    assert.deepEqual(created.body, { code: 404, reason: 'creating the session not found' });
    const network = await answerOf(
      new ServiceResource(
        { find: () => Promise.reject(new Error('ECONNREFUSED')) } as unknown as CustomResourceClient<'session'>,
        'session',
      ).find('s'),
    );
    assert.deepEqual(network.body, { code: 500, reason: 'reading the session failed' });
  });

  it('never carries the API server’s message, which may quote the submitted object', async () => {
    for (const status of [400, 404, 409, 422, 429, 500, 503]) {
      const error = await answerOf(new ServiceResource(failing<'session'>(status), 'session').delete('s'));
      assert.ok(!JSON.stringify(error.body).includes('secret-value'));
      assert.ok(!error.message.includes('secret-value'));
    }
  });
});
