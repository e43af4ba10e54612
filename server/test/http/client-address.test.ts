import assert from 'node:assert/strict';
import type { Request } from 'express';
import { clientKey, trustProxySchema } from '../../src/http/client-address.js';
import { OpenCounts } from '../../src/http/open-counts.js';

const from = (ip: string) => ({ ip, socket: {} }) as unknown as Request;

describe('http: the client of per-client caps', () => {
  it('counts an IPv4 address (also IPv4-mapped) as itself and an IPv6 address by its /64', () => {
    assert.equal(clientKey(from('203.0.113.7')), '203.0.113.7');
    assert.equal(clientKey(from('::ffff:203.0.113.7')), '203.0.113.7');
    assert.equal(clientKey(from('2001:db8:1:2:aaaa::1')), '2001:db8:1:2::/64');
    assert.equal(clientKey(from('2001:db8:1:2:bbbb:cccc:dddd:eeee')), '2001:db8:1:2::/64');
    assert.equal(clientKey(from('2001:db8::1')), '2001:db8:0:0::/64');
    assert.equal(clientKey(from('fe80::1%eth0')), 'fe80:0:0:0::/64');
    assert.equal(clientKey(from('::1')), '0:0:0:0::/64');
  });

  it('reads TRUST_PROXY as none, a number of hops or a list of addresses and ranges, and refuses anything else', () => {
    const schema = trustProxySchema('TRUST_PROXY');
    assert.equal(schema.parse(undefined), false);
    assert.equal(schema.parse(''), false);
    assert.equal(schema.parse('1'), 1);
    assert.deepEqual(schema.parse('10.0.0.0/8, loopback,fd00::1'), ['10.0.0.0/8', 'loopback', 'fd00::1']);
    for (const bad of ['true', '10.0.0.0/8/1', 'ingress-nginx', '1.2.3.4,']) {
      assert.throws(() => schema.parse(bad), /TRUST_PROXY must be/, bad);
    }
  });

  it('admits under every cap at once and releases once, however often release is called', () => {
    const counts = new OpenCounts();
    const caps = (client: string) => [
      { key: `client:${client}`, max: 1, refusal: 'client full' },
      { key: 'total', max: 2, refusal: 'total full' },
    ];
    const first = counts.admit(caps('a'));
    assert.ok('release' in first);
    assert.deepEqual(counts.admit(caps('a')), { refused: 'client full' });
    assert.ok('release' in counts.admit(caps('b')));
    assert.deepEqual(counts.admit(caps('c')), { refused: 'total full' });
    first.release();
    first.release();
    assert.ok('release' in counts.admit(caps('c')));
    assert.deepEqual(counts.admit(caps('d')), { refused: 'total full' });
  });
});
