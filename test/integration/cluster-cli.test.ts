// `npm run cluster -- up|status|down` as a user runs it: a second, independent control plane. And a
// start that hangs past its deadline (the real-node suites' start, test/support/real-node.ts): it
// fails with the step it was in and its logs' tails, and leaves nothing running.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { startControlPlane, type ControlPlaneState } from '../../scripts/cluster/control-plane.js';
import { isAlive } from '../../scripts/cluster/processes.js';
import { startWithDeadlines } from '../support/real-node.js';

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

/** Processes whose command line names `text`. */
function processesNaming(text: string): string[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      } catch {
        return '';
      }
    })
    .filter((command) => command.includes(text));
}

/** The start's deadline: a few times what a start of the control plane takes on a loaded machine. */
const START_MS = 15_000;

describe('a cluster start past its deadline', function () {
  this.timeout(5 * 60_000);

  it('stops what it started and fails with the step it was in and the tails of its logs', async () => {
    const dir = path.join(await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-hung-')), 'cluster');
    const steps: string[] = [];
    const hung = startWithDeadlines(dir, { buildsMs: 10 * 60_000, startMs: START_MS }, async (onStep) => {
      const record = (step: string) => {
        steps.push(step);
        onStep(step);
      };
      const state = await startControlPlane(dir, { onStep: record });
      record('waiting for what never comes');
      // As a start waiting on the cluster does: it hangs until the control plane is stopped, then fails.
      const kc = new k8s.KubeConfig();
      kc.loadFromFile(state.kubeconfig);
      return new Promise<never>((_, reject) => {
        const ended = (error: unknown) => reject(error instanceof Error ? error : new Error('the watch ended'));
        new k8s.Watch(kc)
          .watch('/api/v1/namespaces', { fieldSelector: 'metadata.name=never-made' }, () => undefined, ended)
          .catch(ended);
      });
    });
    const error = await hung.then(
      () => assert.fail('the start resolved'),
      (e: Error) => e,
    );
    assert.ok(steps.length > 1, `steps: ${steps.join(', ')}`);
    assert.equal(steps[0], 'building the binaries');
    assert.ok(
      error.message.startsWith(`the cluster's start in ${dir} did not finish within ${START_MS / 1000} s; it was `),
      error.message,
    );
    assert.ok(error.message.includes(`it was ${steps.at(-1)}.\n`), error.message);
    // The control plane's logs, as far as it came (etcd's always: it starts first).
    assert.match(error.message, /\n {2}logs\/etcd\.log \(last \d+ lines\):\n {4}\S/);
    if (steps.includes('waiting for what never comes'))
      for (const component of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kwok'])
        assert.match(error.message, new RegExp(`\n {2}logs/${component}\\.log \\(last \\d+ lines\\):`));
    assert.deepEqual(processesNaming(dir), []);
    assert.equal(existsSync(dir), false);
    await rm(path.dirname(dir), { recursive: true, force: true });
  });
});
