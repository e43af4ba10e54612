import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { isApiUnavailable } from '../../src/kube/client.js';

describe('isApiUnavailable: a call that got no answer from the API server', () => {
  it('tells a passed deadline (an abort) from an unreachable API server', () => {
    // What node-fetch rejects with when the request's signal aborts, and a signal's own timeout reason.
    const aborted = Object.assign(new Error('The user aborted a request.'), { name: 'AbortError', type: 'aborted' });
    assert.equal(isApiUnavailable(aborted), 'timeout');
    assert.equal(isApiUnavailable(new DOMException('timed out', 'TimeoutError')), 'timeout');
    const refused = Object.assign(new Error('connect ECONNREFUSED'), {
      name: 'FetchError',
      type: 'system',
      code: 'ECONNREFUSED',
    });
    assert.equal(isApiUnavailable(refused), 'unreachable');
    assert.equal(isApiUnavailable(Object.assign(new Error('reset'), { code: 'ECONNRESET' })), 'unreachable');
  });

  it('is undefined for an answer of the API server and for any other failure', () => {
    assert.equal(isApiUnavailable(new k8s.ApiException(503, 'unavailable', '{}', {})), undefined);
    assert.equal(isApiUnavailable(new k8s.ApiException(504, 'timeout', '{}', {})), undefined);
    assert.equal(isApiUnavailable(new Error('ECONNREFUSED')), undefined);
    assert.equal(isApiUnavailable(Object.assign(new Error('bad'), { code: 'ERR_INVALID_ARG_TYPE' })), undefined);
    assert.equal(isApiUnavailable(undefined), undefined);
    assert.equal(isApiUnavailable('aborted'), undefined);
  });
});
