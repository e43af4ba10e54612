// The suite builds what it uses before any test runs (npm run cluster -- prebuild): a binary or an
// image left out of that plan is built inside a test instead, one part after another, on the cold run.
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { BUILD_TARGETS } from '../../scripts/cluster/control-plane.js';
import type { MachineFacts } from '../../scripts/cluster/real-node.js';
import { suiteBuilds } from '../../scripts/cluster/suite-builds.js';

const root = path.resolve(import.meta.dirname, '..', '..');

const capable: MachineFacts = { platform: 'linux', uid: 0, cgroups: true, onPath: () => true, runningNode: undefined };

describe("the suite's prebuild", () => {
  it('is the first step of npm test', async () => {
    const { scripts } = JSON.parse(await readFile(path.join(root, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    assert.match(scripts.test!, /^npm run cluster -- prebuild && /);
  });

  it('builds every Go binary and every image the suites use where a real node can run, also while one runs', () => {
    for (const machine of [capable, { ...capable, runningNode: '/tmp/x/node' }]) {
      const builds = suiteBuilds(machine);
      assert.deepEqual([...builds.binaries].sort(), [...BUILD_TARGETS].sort());
      const npmStartImages = ['auth-proxy', 'session-javascript']; // scripts/start/main.ts
      const nodeImages = ['pause', 'local-path-helper']; // prepareRealNode
      const chartImages = ['service', 'operator', 'landing-page']; // real-node-chart, real-node-images
      for (const image of [...npmStartImages, ...nodeImages, ...chartImages])
        assert.ok(builds.images.includes(image as (typeof builds.images)[number]), image);
      assert.equal(builds.withoutRealNode, undefined);
    }
  });

  it("leaves the real node's parts out, saying why, where no real node can run", () => {
    assert.deepEqual(suiteBuilds({ ...capable, uid: 1000 }), {
      binaries: ['k8s', 'helm', 'auth-proxy'],
      images: [],
      withoutRealNode: 'the real node needs root (kubelet, containerd, mounts, iptables)',
    });
  });
});
