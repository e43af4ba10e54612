// `npm run cluster -- up|status|down` as a user runs it: a second, independent control plane.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import type { ControlPlaneState } from '../../scripts/cluster/control-plane.js';
import { isAlive } from '../../scripts/cluster/processes.js';

const run = promisify(execFile);

describe('npm run cluster', function () {
  this.timeout(15 * 60_000);

  it('up prints KUBECONFIG last and serves the CRDs; down stops every process and removes the data dir', async () => {
    const dir = path.join(await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-cli-')), 'cluster');
    const env = { ...process.env, IDE_CLOUD_CLUSTER_DIR: dir };
    const up = await run('npm', ['run', '--silent', 'cluster', '--', 'up', '--fake-pods'], { env });
    const last = up.stdout.trim().split('\n').pop()!;
    assert.match(last, /^KUBECONFIG=\//);
    const kubeconfig = last.slice('KUBECONFIG='.length);
    const state = JSON.parse(await readFile(path.join(dir, 'state.json'), 'utf8')) as ControlPlaneState;
    const pids = Object.values(state.pids);
    assert.equal(pids.length, 5);
    try {
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(kubeconfig);
      const crds = await kc.makeApiClient(k8s.ApiextensionsV1Api).listCustomResourceDefinition();
      assert.deepEqual(crds.items.map((c) => c.metadata?.name).sort(), [
        'appdefinitions.ide.cloud',
        'sessions.ide.cloud',
        'workspaces.ide.cloud',
      ]);
      const status = await run('npm', ['run', '--silent', 'cluster', '--', 'status'], { env });
      assert.equal((status.stdout.match(/running \(pid/g) ?? []).length, 5);
    } finally {
      await run('npm', ['run', '--silent', 'cluster', '--', 'down'], { env });
    }
    assert.deepEqual(pids.filter(isAlive), []);
    await assert.rejects(readFile(path.join(dir, 'state.json')));
  });
});
