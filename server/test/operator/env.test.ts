import assert from 'node:assert/strict';
import { mergeSessionEnvironment } from '../../src/operator/session/env.js';

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

describe('operator session environment merge', () => {
  it('merges envVars, then config maps in order, then decoded secrets in order: later wins', () => {
    const merged = mergeSessionEnvironment({
      envVars: { A: 'direct', B: 'direct', C: 'direct' },
      configMaps: [{ B: 'cm1', D: 'cm1' }, { D: 'cm2' }],
      secrets: [{ C: b64('secret1') }, { E: b64('ünïcode') }],
    });
    assert.deepEqual(merged, { A: 'direct', B: 'cm1', C: 'secret1', D: 'cm2', E: 'ünïcode' });
  });

  it('handles absent sources and empty objects', () => {
    assert.deepEqual(mergeSessionEnvironment({}), {});
    assert.deepEqual(mergeSessionEnvironment({ configMaps: [undefined], secrets: [undefined] }), {});
  });
});
