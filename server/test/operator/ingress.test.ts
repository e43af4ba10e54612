import assert from 'node:assert/strict';
import { sessionRoutesTo, withRoute } from '../../src/operator/routes/ingress.js';

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
  it('reports no change when the path is there with its backend, and removes only that path', () => {
    const before = structuredClone(spec);
    const added = withRoute(spec, entry, true)!;
    assert.deepEqual(spec, before, 'the spec given is left as it was');
    assert.equal(withRoute(added, entry, true), undefined);
    const removed = withRoute(added, entry, false)!;
    assert.deepEqual(
      removed.rules!.flatMap((r) => r.http!.paths.map((p) => p.path)),
      ['/s-0/'],
    );
    assert.equal(withRoute(spec, entry, false), undefined, 'a path that is not there: no change');
  });

  it('adds the rule of a new host, and drops a rule its last path leaves', () => {
    const other = withRoute(spec, { ...entry, host: 'new.example.org' }, true)!;
    assert.deepEqual(
      other.rules!.map((r) => [r.host, r.http!.paths.map((p) => p.path)]),
      [
        ['ide.example.org', ['/s-0/']],
        ['new.example.org', ['/s-1/']],
      ],
    );
    assert.deepEqual(withRoute(spec, { ...entry, path: '/s-0/' }, false), { rules: [] });
  });

  it('removes every copy of a path that was appended twice', () => {
    const twice = withRoute(withRoute(spec, entry, true), { ...entry, path: '/s-x/' }, true)!;
    const rule = twice.rules!.find((r) => r.host === entry.host)!;
    rule.http!.paths.push(structuredClone(rule.http!.paths.find((p) => p.path === entry.path)!));
    const removed = withRoute(twice, entry, false)!;
    assert.deepEqual(
      removed.rules!.flatMap((r) => r.http!.paths.map((p) => p.path)),
      ['/s-0/', '/s-x/'],
    );
  });

  it("finds a session's routes to a warm instance: only its own paths leading there", () => {
    const path = (p: string, name: string) => ({ path: p, pathType: 'Prefix', backend: { service: { name } } });
    const ingresses = [
      {
        metadata: { name: 'sessions' },
        spec: {
          rules: [
            { host: 'a.example.org', http: { paths: [path('/s-1/k/', 'app-pool-1'), path('/s-10/k/', 'app-pool-1')] } },
            { host: 'b.example.org', http: { paths: [path('/s-1/k/', 's-1'), path('/s-2/k/', 'app-pool-2')] } },
          ],
        },
      },
      { metadata: { name: 'other' }, spec: { rules: [{ host: 'c.example.org' }] } },
    ];
    assert.deepEqual(sessionRoutesTo(ingresses, 'app-pool-1', 's-1'), [
      { ingressName: 'sessions', entry: { host: 'a.example.org', path: '/s-1/k/', serviceName: 'app-pool-1' } },
    ]);
    assert.deepEqual(sessionRoutesTo(ingresses, 'app-pool-2', 's-1'), []);
  });
});
