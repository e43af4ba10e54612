import assert from 'node:assert/strict';
import { appendRoutePatch, withRoute } from '../../src/operator/ingress.js';

const entry = { host: 'ide.example.org', path: '/s-1/', serviceName: 's-1' };
const spec = {
  rules: [
    { host: 'other.example.org', http: { paths: [] } },
    {
      host: 'ide.example.org',
      http: { paths: [{ path: '/s-0/', pathType: 'Prefix', backend: { service: { name: 's-0' } } }] },
    },
  ],
};

describe('shared Ingress route changes', () => {
  it('appends a path to its host rule with a test of that rule', () => {
    assert.deepEqual(appendRoutePatch(spec, entry), [
      { op: 'test', path: '/spec/rules/1/host', value: 'ide.example.org' },
      {
        op: 'add',
        path: '/spec/rules/1/http/paths/-',
        value: { path: '/s-1/', pathType: 'Prefix', backend: { service: { name: 's-1', port: { number: 80 } } } },
      },
    ]);
  });

  it('leaves a missing host rule and an existing path to read-modify-write', () => {
    assert.equal(appendRoutePatch({ rules: [] }, entry), undefined);
    assert.equal(appendRoutePatch(undefined, entry), undefined);
    assert.equal(appendRoutePatch(spec, { ...entry, path: '/s-0/' }), undefined);
  });

  it('reports no change when the path is there with its backend, and removes only that path', () => {
    const added = withRoute(spec, entry, true)!;
    assert.equal(withRoute(added, entry, true), undefined);
    const removed = withRoute(added, entry, false)!;
    assert.deepEqual(
      removed.rules!.flatMap((r) => r.http!.paths.map((p) => p.path)),
      ['/s-0/'],
    );
  });
});
