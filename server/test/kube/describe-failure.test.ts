import assert from 'node:assert/strict';
import * as k8s from '@kubernetes/client-node';
import { describeFailure } from '../../src/kube/client.js';

describe('describeFailure: what may be logged about a failure', () => {
  const secret = 'GIT_URI=https://student:tok3n@git.example.org/x.git';

  it("keeps a Kubernetes answer's status and reason, never its message, body or headers", () => {
    const body = JSON.stringify({ kind: 'Status', reason: 'Invalid', message: `env: Invalid value: "${secret}"` });
    const error = new k8s.ApiException(422, `Unprocessable: ${secret}`, body, { authorization: 'Bearer tok3n' });
    const described = describeFailure(error);
    assert.deepEqual(described, { kubernetesStatus: 422, kubernetesReason: 'Invalid' });
    assert.ok(!JSON.stringify(described).includes('tok3n'));
  });

  it("keeps another error's name and code only", () => {
    const error = Object.assign(new Error(`connect failed for ${secret}`), { code: 'ECONNREFUSED' });
    assert.deepEqual(describeFailure(error), { errorName: 'Error', code: 'ECONNREFUSED' });
    assert.deepEqual(describeFailure(secret), { errorType: 'string' });
  });
});
