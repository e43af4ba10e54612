// The operator's and the service's images run one bundled file each (server/src/build/bundle.ts,
// images/server/Dockerfile). Built here into a directory with no node_modules above it and run as the
// image runs them, against the real API server: a launch through the bundled service, reconciled by
// the bundled operator, answers its URL.
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { isBuiltin } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../scripts/cluster/control-plane.js';
import {
  bundlePath,
  bundleServer,
  BUNDLED_ENTRIES,
  OPTIONAL_IMPORTS,
  type BundledProcess,
} from '../../server/src/build/bundle.js';
import { useCluster, type TestCluster } from '../support/cluster.js';
import { createTestNamespace, deleteTestNamespace, eventually } from '../support/kube.js';
import { endProcess, spawnTracked } from '../support/processes.js';
import { applyAppDefinitions, call, resourcesOf } from '../support/service-harness.js';

const APP_ID = 'bundle-app-id-for-tests-7d41';

interface Child {
  process: ChildProcess;
  output: string[];
}

function run(dir: string, name: BundledProcess, env: Record<string, string>): Child {
  const child = spawnTracked(`bundled ${name}`, process.execPath, [bundlePath(dir, name)], {
    cwd: dir,
    // Only what the image's environment would hold: no NODE_OPTIONS (the tests' tsx loader), no NODE_PATH.
    env: { PATH: process.env.PATH ?? '', NODE_ENV: 'production', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
  return { process: child, output };
}

async function stop(child: Child | undefined): Promise<void> {
  if (child) await endProcess(child.process, 'SIGTERM');
}

describe('the bundled operator and service (the images run them)', function () {
  this.timeout(120_000);
  let cluster: TestCluster;
  let namespace: string;
  let dir: string;
  let imports: Record<BundledProcess, string[]>;
  let operator: Child | undefined;
  let service: Child | undefined;

  before(async () => {
    cluster = await useCluster();
    namespace = await createTestNamespace(cluster.kc, 'bundles');
    dir = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-bundles-'));
    imports = await bundleServer(dir);
  });
  after(async () => {
    await stop(service);
    await stop(operator);
    if (dir) await rm(dir, { recursive: true, force: true });
    if (cluster && namespace) await deleteTestNamespace(cluster.kc, namespace);
  });

  it('imports nothing but Node itself (and optional add-ons), and finds no node_modules where it runs', () => {
    for (let d = dir; ; d = path.dirname(d)) {
      assert.ok(!existsSync(path.join(d, 'node_modules')), `${d} holds node_modules`);
      if (path.dirname(d) === d) break;
    }
    for (const name of Object.keys(BUNDLED_ENTRIES) as BundledProcess[]) {
      assert.ok(imports[name].includes('node:fs'), `${name}: esbuild reported none of its imports`);
      assert.deepEqual(
        imports[name].filter((specifier) => !isBuiltin(specifier) && !OPTIONAL_IMPORTS.includes(specifier)),
        [],
        `${name} imports modules that are not Node's own`,
      );
    }
  });

  it('a launch through the bundled service, reconciled by the bundled operator, answers its URL', async () => {
    await applyAppDefinitions(resourcesOf(cluster.kc, namespace), [{}]);
    operator = run(dir, 'operator', {
      KUBECONFIG: cluster.kubeconfig,
      IDE_CLOUD_NAMESPACE: namespace,
      IDE_CLOUD_EAGER_START: 'false',
    });
    const port = await freePort();
    service = run(dir, 'service', {
      KUBECONFIG: cluster.kubeconfig,
      IDE_CLOUD_NAMESPACE: namespace,
      SERVICE_AUTH_TOKEN: APP_ID,
      ADMIN_API_TOKEN: 'admin-token-for-the-bundle-test-2c9e',
      PORT: String(port),
      HOST: '127.0.0.1',
    });
    const url = `http://127.0.0.1:${port}`;
    const running = () => `\noperator:\n${operator!.output.join('')}\nservice:\n${service!.output.join('')}`;
    await eventually(async () => {
      assert.equal(service!.process.exitCode, null, `the service exited${running()}`);
      assert.equal((await call(url, 'GET', '/q/health')).status, 200);
    }, 30_000);

    const answer = await call(url, 'POST', '/service', {
      body: { appId: APP_ID, user: 'bundle@example.com', appDefinition: 'python-latest', ephemeral: true },
    });
    assert.equal(answer.status, 200, `${answer.text}${running()}`);
    assert.match(answer.text, /^http:\/\/ide\.localtest\.me\/session-python-latest-[a-z0-9-]+\/[0-9a-f]{32}\/$/);
    assert.equal(operator.process.exitCode, null, `the operator exited${running()}`);
  });
});
