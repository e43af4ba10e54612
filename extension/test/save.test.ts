// POST /save within the operator's wait: the operator sends how long it waits (`timeoutSeconds`), and
// the bridge stops an agent that runs on a margin before, answering `failed` in time, so no save goes
// on after the operator has given up and stops the session. Exact refusals of a bad bound.
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { MemoryLogger } from '../src/logger.js';
import { agentTimeoutMs, WorkSaver } from '../src/save.js';
import { BridgeServer } from '../src/server.js';
import { EnvironmentStore } from '../src/store.js';
import { MemorySecretStorage } from './fakes.js';

const TOKEN = 'instance-token-save-bound-41d0';

describe('data bridge: the save within the operator’s wait', () => {
  let dir: string;
  let server: BridgeServer;
  let base: string;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'bridge-save-'));
    // An agent that never finishes (a push hanging on the network).
    const agent = path.join(dir, 'agent');
    await writeFile(agent, '#!/bin/sh\nexec sleep 600\n');
    await chmod(agent, 0o755);
    const logger = new MemoryLogger();
    const store = new EnvironmentStore(new MemorySecretStorage(), logger);
    server = new BridgeServer(store, logger, {
      host: '127.0.0.1',
      port: 0,
      token: TOKEN,
      // The bridge's own bound is far longer than the test: only the operator's can end the agent.
      saver: new WorkSaver(store, logger, { workspaceDir: dir, agentCommand: agent, timeoutMs: 600_000 }),
    });
    const { port } = (await server.listen()) as AddressInfo;
    base = `http://127.0.0.1:${port}`;
  });
  after(async () => {
    server.dispose();
    await rm(dir, { recursive: true, force: true });
  });

  async function save(body: string): Promise<{ status: number; json: unknown }> {
    const res = await fetch(`${base}/save`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body,
    });
    return { status: res.status, json: await res.json() };
  }

  it('stops the agent before the operator gives up and answers failed', async () => {
    assert.deepEqual(await save('{"timeoutSeconds": 2}'), {
      status: 200,
      json: { outcome: 'failed', code: 'SaveFailed', message: 'the agent did not finish in time' },
    });
  });

  it('refuses a bound that is not a whole number of seconds from 1 to 3600', async () => {
    for (const body of ['{"timeoutSeconds": 0}', '{"timeoutSeconds": 1.5}', '{"timeoutSeconds": "60"}']) {
      assert.deepEqual(await save(body), {
        status: 400,
        json: { error: 'field "timeoutSeconds" must be an integer from 1 to 3600' },
      });
    }
  });

  it('the agent gets the wait less a margin (a tenth, 1 to 5 s), never more than the bridge’s own bound', () => {
    assert.equal(agentTimeoutMs(120_000, undefined), 120_000);
    assert.equal(agentTimeoutMs(120_000, 60), 55_000);
    assert.equal(agentTimeoutMs(120_000, 20), 18_000);
    assert.equal(agentTimeoutMs(120_000, 5), 4_000);
    assert.equal(agentTimeoutMs(120_000, 600), 120_000);
  });
});
