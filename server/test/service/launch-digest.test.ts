import assert from 'node:assert/strict';
import type { EnvironmentVars } from '../../src/model/requests.js';
import { launchDigest } from '../../src/service/launch-digest.js';

describe('launch digest', () => {
  const secret = '0123456789abcdef0123456789abcdef';
  const env = { fromMap: { COURSE: 'algorithms', TOKEN: 'tok-1' }, fromConfigMaps: ['a', 'b'], fromSecrets: ['s'] };

  it('is the same for the same values, whatever the order of the map', () => {
    const reordered = {
      fromSecrets: ['s'],
      fromConfigMaps: ['a', 'b'],
      fromMap: { TOKEN: 'tok-1', COURSE: 'algorithms' },
    };
    assert.equal(launchDigest(secret, reordered), launchDigest(secret, env));
    assert.equal(launchDigest(secret, undefined), launchDigest(secret, {}));
    assert.equal(launchDigest(secret, undefined), launchDigest(secret, { fromMap: {}, fromConfigMaps: [] }));
  });

  it('differs for another value, another name, another order of config maps or secrets, another key', () => {
    const base = launchDigest(secret, env);
    const variants: EnvironmentVars[] = [
      { ...env, fromMap: { COURSE: 'algorithms', TOKEN: 'tok-2' } },
      { ...env, fromMap: { COURSE: 'algorithms', TOKEN2: 'tok-1' } },
      { ...env, fromConfigMaps: ['b', 'a'] },
      { ...env, fromSecrets: [] },
      { fromMap: env.fromMap },
    ];
    const others = variants.map((other) => launchDigest(secret, other));
    assert.equal(new Set([base, ...others]).size, others.length + 1);
    assert.notEqual(launchDigest('fedcba9876543210fedcba9876543210', env), base);
  });

  it('holds no value in plain text', () => {
    const digest = launchDigest(secret, env);
    assert.match(digest, /^[0-9a-f]{64}$/);
    for (const value of ['algorithms', 'tok-1', 'COURSE', secret]) assert.ok(!digest.includes(value));
  });
});
