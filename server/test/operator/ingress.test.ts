import assert from 'node:assert/strict';
import { routeChangesPatch, sessionRoutesTo, withRoute } from '../../src/operator/routes/ingress.js';

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
  const add = (e: typeof entry) => ({ entry: e, present: true });
  const remove = (e: typeof entry) => ({ entry: e, present: false });
  const backend = (name: string) => ({ service: { name, port: { number: 80 } } });
  /** The operations of a patch: a rule's host tested, a path tested where it is, removed, added. */
  const hostIs = (rule: number, value: string) => ({ op: 'test', path: `/spec/rules/${rule}/host`, value });
  const pathIs = (rule: number, index: number, value: string) => ({
    op: 'test',
    path: `/spec/rules/${rule}/http/paths/${index}/path`,
    value,
  });
  const removeAt = (rule: number, index: number) => ({ op: 'remove', path: `/spec/rules/${rule}/http/paths/${index}` });
  const addTo = (rule: number, path: string) => ({
    op: 'add',
    path: `/spec/rules/${rule}/http/paths/-`,
    value: { path, pathType: 'Prefix', backend: backend(path.slice(1, -1)) },
  });

  it('appends paths to their host rule, testing the rule once', () => {
    const second = { ...entry, path: '/s-2/', serviceName: 's-2' };
    assert.deepEqual(routeChangesPatch(spec, [add(entry), add(second)]), {
      patch: [hostIs(1, 'ide.example.org'), addTo(1, '/s-1/'), addTo(1, '/s-2/')],
      carried: [add(entry), add(second)],
    });
  });

  it('tests the host of each rule it changes, then removes from the highest index down, each path tested where it is, then adds', () => {
    const rule = (host: string, paths: string[]) => ({
      host,
      http: { paths: paths.map((path) => ({ path, pathType: 'Prefix', backend: backend(path.slice(1, -1)) })) },
    });
    const two = {
      rules: [
        rule('a.example.org', ['/s-0/', '/s-1/', '/s-2/', '/s-1/', '/s-3/']),
        rule('b.example.org', ['/t-0/', '/t-1/']),
      ],
    };
    const a = { ...entry, host: 'a.example.org' };
    const b = { ...entry, host: 'b.example.org' };
    const changes = [
      remove({ ...b, path: '/t-0/' }),
      remove({ ...a, path: '/s-1/' }),
      add({ ...a, path: '/s-4/', serviceName: 's-4' }),
      remove({ ...a, path: '/s-3/' }),
    ];
    assert.deepEqual(routeChangesPatch(two, changes), {
      patch: [
        hostIs(0, 'a.example.org'),
        hostIs(1, 'b.example.org'),
        pathIs(0, 4, '/s-3/'),
        removeAt(0, 4),
        pathIs(0, 3, '/s-1/'),
        removeAt(0, 3),
        pathIs(0, 1, '/s-1/'),
        removeAt(0, 1),
        pathIs(1, 0, '/t-0/'),
        removeAt(1, 0),
        addTo(0, '/s-4/'),
      ],
      carried: changes,
    });
  });

  it('leaves to read-modify-write: a missing host rule, a path already there or not there, one named twice, a rule left empty', () => {
    const none = { patch: [], carried: [] };
    assert.deepEqual(routeChangesPatch({ rules: [] }, [add(entry)]), none);
    assert.deepEqual(routeChangesPatch(undefined, [add(entry)]), none);
    assert.deepEqual(routeChangesPatch(spec, [add({ ...entry, path: '/s-0/' })]), none);
    assert.deepEqual(routeChangesPatch(spec, [remove(entry)]), none);
    assert.deepEqual(routeChangesPatch(spec, [add(entry), add(entry)]), none);
    assert.deepEqual(routeChangesPatch(spec, [remove({ ...entry, path: '/s-0/' })]), none);
    // Emptied and filled again in the same patch, the rule keeps a path: the removal goes with it.
    const refill = [remove({ ...entry, path: '/s-0/' }), add(entry)];
    assert.deepEqual(routeChangesPatch(spec, refill), {
      patch: [hostIs(1, 'ide.example.org'), pathIs(1, 0, '/s-0/'), removeAt(1, 0), addTo(1, '/s-1/')],
      carried: refill,
    });
  });

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
