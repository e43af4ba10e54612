// IDE Cloud's own writes per launch, net of the idle window before: a leader's Lease renewals are the
// background's, never a launch's, however many of them fell into the launches' window.
import assert from 'node:assert/strict';
import { perLaunch, type ApiDelta } from '../../scripts/bench/apimetrics.js';
import { LEADER_LEASE, type OwnDelta } from '../../scripts/bench/auditlog.js';

function delta(writes: Record<string, number>): ApiDelta {
  const own: OwnDelta = {
    reads: 0,
    writes: Object.values(writes).reduce((a, b) => a + b, 0),
    watches: 0,
    byClient: { 'ide-cloud-operator': { reads: 0, writes: 0 }, 'ide-cloud-service': { reads: 0, writes: 0 } },
    writesByKey: {},
    readsByKey: {},
    failedWritesByKey: {},
    readsByClientKey: {},
    writesByClientKey: writes,
  };
  return { reads: 0, writes: own.writes, byKey: {}, readBytes: 0, auditErrors: 0, own };
}

describe('bench: IDE Cloud’s own writes per launch', () => {
  it("counts a launch's writes, its claim of a reservation included, net of the background, and no renewal of the leader's Lease", () => {
    const launches = delta({
      'ide-cloud-service create sessions': 20,
      'ide-cloud-operator patch sessions/status': 40,
      // The claims: each a write of a warm instance's reservation, a Lease too.
      'ide-cloud-operator update leases': 20,
      // One renewal more than the idle window's rate gives the launches' 20 s.
      [`ide-cloud-operator update ${LEADER_LEASE}`]: 11,
    });
    const idle = delta({ [`ide-cloud-operator update ${LEADER_LEASE}`]: 5 });
    const net = perLaunch(launches, 20, { delta: idle, seconds: 10 }, 20).own!;
    assert.equal(net.writes, 4);
    assert.equal(net.writesWithoutEvents, 4);
    assert.deepEqual(net.writesByKey, { 'patch sessions/status': 2, 'create sessions': 1, 'update leases': 1 });
    assert.equal(net.backgroundWritesPerSec, 0.5, 'the renewals stay in the background rate');
  });
});
