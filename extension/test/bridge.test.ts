import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DataBridge, type RegisterCommand } from '../src/bridge.js';
import type { BridgeConfig } from '../src/config.js';
import { MemoryLogger } from '../src/logger.js';
import { parseDataPayload, type Environment } from '../src/payload.js';
import { DATA_BRIDGE_RESERVATION_HEADER } from '../../server/src/model/data-bridge.js';
import { BridgeServer } from '../src/server.js';
import { EnvironmentStore, SECRET_KEY } from '../src/store.js';
import { MemorySecretStorage } from './fakes.js';

const SECRET = 'hunter2-do-not-log';
const BRIDGE_TOKEN = 'instance-token-3f9c2b7e1d5a';
/** What the operator sends with its POST /data: the instance's token and the reservation. */
const OPERATOR = { authorization: `Bearer ${BRIDGE_TOKEN}`, [DATA_BRIDGE_RESERVATION_HEADER]: 'session-uid-1' };

async function post(
  base: string,
  body: string,
  headers: Record<string, string> = OPERATOR,
): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${base}/data`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
  });
  return { status: res.status, json: await res.json() };
}

function assertNoSecretIn(lines: readonly string[]): void {
  for (const line of lines) assert.ok(!line.includes(SECRET), `a log line carries a value: ${line}`);
}

describe('extension: EnvironmentStore', () => {
  it('merges, persists under one key and picks only present keys', async () => {
    const secrets = new MemorySecretStorage();
    const logger = new MemoryLogger();
    const store = new EnvironmentStore(secrets, logger);
    await store.merge({ A: '1', TOKEN: SECRET });
    await store.merge({ A: '2', B: 'b' });
    assert.deepEqual(store.pick(['A', 'B', 'TOKEN', 'MISSING']), { A: '2', B: 'b', TOKEN: SECRET });
    assert.deepEqual([...secrets.data.keys()], [SECRET_KEY]);
    assert.deepEqual(JSON.parse(secrets.data.get(SECRET_KEY)!), { A: '2', TOKEN: SECRET, B: 'b' });
    assert.deepEqual(logger.lines, [
      'info received 2 key(s): A, TOKEN; 2 key(s) held',
      'info received 2 key(s): A, B; 3 key(s) held',
    ]);
  });

  it('treats keys such as __proto__ and toString as plain names', async () => {
    const store = new EnvironmentStore(new MemorySecretStorage(), new MemoryLogger());
    await store.merge(parseDataPayload('{"environment":{"__proto__":"p","toString":"t"}}').environment);
    const picked = store.pick(['__proto__', 'toString', 'constructor']);
    assert.deepEqual(Object.entries(picked), [
      ['__proto__', 'p'],
      ['toString', 't'],
    ]);
    assert.equal(Object.getPrototypeOf(picked), Object.prototype);
  });

  it('restores what an earlier activation stored', async () => {
    const secrets = new MemorySecretStorage();
    secrets.data.set(SECRET_KEY, JSON.stringify({ A: '1', TOKEN: SECRET, BAD: 3 }));
    const logger = new MemoryLogger();
    const store = new EnvironmentStore(secrets, logger);
    await store.restore();
    assert.deepEqual(store.pick(['A', 'TOKEN', 'BAD']), { A: '1', TOKEN: SECRET });
    assert.deepEqual(logger.lines, ['info restored 2 key(s): A, TOKEN']);
  });

  it('starts empty on a missing or unreadable entry', async () => {
    const secrets = new MemorySecretStorage();
    const logger = new MemoryLogger();
    await new EnvironmentStore(secrets, logger).restore();
    secrets.data.set(SECRET_KEY, `not json ${SECRET}`);
    const store = new EnvironmentStore(secrets, logger);
    await store.restore();
    assert.equal(store.size, 0);
    assert.deepEqual(logger.lines, [
      'info no stored environment to restore',
      'warn the stored environment is unreadable; starting empty',
    ]);
  });

  it('keeps the values in memory when persisting fails, and logs no value', async () => {
    const secrets = new MemorySecretStorage();
    secrets.failWrites = true;
    const logger = new MemoryLogger();
    const store = new EnvironmentStore(secrets, logger);
    await assert.rejects(store.merge({ TOKEN: SECRET }), { name: 'PersistError' });
    assert.deepEqual(store.pick(['TOKEN']), { TOKEN: SECRET });
    assert.equal(logger.lines.at(-1), 'error could not persist the environment: Error');
    assertNoSecretIn(logger.lines);
  });

  it('stores the latest snapshot last when writes overlap', async () => {
    const secrets = new MemorySecretStorage();
    const store = new EnvironmentStore(secrets, new MemoryLogger());
    await Promise.all([store.merge({ A: '1' }), store.merge({ B: '2' }), store.merge({ A: '3' })]);
    assert.deepEqual(JSON.parse(secrets.data.get(SECRET_KEY)!), { A: '3', B: '2' });
    assert.equal(secrets.writes, 3);
  });
});

describe('extension: BridgeServer', () => {
  let secrets: MemorySecretStorage;
  let logger: MemoryLogger;
  let store: EnvironmentStore;
  let server: BridgeServer;
  let base: string;

  beforeEach(async () => {
    secrets = new MemorySecretStorage();
    logger = new MemoryLogger();
    store = new EnvironmentStore(secrets, logger);
    server = new BridgeServer(store, logger, { host: '127.0.0.1', port: 0, token: BRIDGE_TOKEN, maxBodyBytes: 1024 });
    const address = await server.listen();
    base = `http://127.0.0.1:${address.port}`;
  });

  afterEach(() => {
    server.dispose();
    assertNoSecretIn(logger.lines);
  });

  it('answers /health', async () => {
    const res = await fetch(`${base}/health`);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), { status: 'UP' });
  });

  it('stores the POST /data of one reservation and refuses a second post (409), keeping the values', async () => {
    assert.deepEqual(await post(base, JSON.stringify({ environment: { A: '1', TOKEN: SECRET } })), {
      status: 200,
      json: { stored: 2, total: 2 },
    });
    assert.deepEqual(await post(base, JSON.stringify({ environment: { A: '2' } })), {
      status: 409,
      json: { error: 'the values of this reservation were already injected', reservation: 'same' },
    });
    const other = { ...OPERATOR, [DATA_BRIDGE_RESERVATION_HEADER]: 'session-uid-2' };
    assert.deepEqual(await post(base, JSON.stringify({ environment: { A: '3' } }), other), {
      status: 409,
      json: {
        error: 'the values of another reservation are held; a new reservation restarts the instance',
        reservation: 'other',
      },
    });
    assert.deepEqual(store.pick(['A', 'TOKEN']), { A: '1', TOKEN: SECRET });
    assert.deepEqual(JSON.parse(secrets.data.get(SECRET_KEY)!), { A: '1', TOKEN: SECRET });
  });

  it('answers 401 without a bearer token and 403 with a wrong one, storing nothing', async () => {
    const body = JSON.stringify({ environment: { PLATFORM_URL: 'https://attacker.example' } });
    const reservation = { [DATA_BRIDGE_RESERVATION_HEADER]: 'session-uid-1' };
    const unauthenticated = await fetch(`${base}/data`, { method: 'POST', body, headers: reservation });
    assert.equal(unauthenticated.status, 401);
    assert.equal(unauthenticated.headers.get('www-authenticate'), 'Bearer');
    assert.deepEqual(await unauthenticated.json(), { error: 'a bearer token is required' });
    assert.deepEqual(await post(base, body, { ...reservation, authorization: `Basic ${BRIDGE_TOKEN}` }), {
      status: 401,
      json: { error: 'a bearer token is required' },
    });
    for (const wrong of ['wrong', `${BRIDGE_TOKEN}x`, BRIDGE_TOKEN.slice(0, -1)]) {
      assert.deepEqual(await post(base, body, { ...reservation, authorization: `Bearer ${wrong}` }), {
        status: 403,
        json: { error: "the token is not this instance's" },
      });
    }
    assert.equal(store.size, 0);
    // Refused posts take no reservation: the operator's own injection still goes through.
    assert.equal((await post(base, JSON.stringify({ environment: { A: '1' } }))).status, 200);
  });

  it('answers 400 without a reservation', async () => {
    const { authorization } = OPERATOR;
    const cases: Record<string, string>[] = [
      { authorization },
      { authorization, [DATA_BRIDGE_RESERVATION_HEADER]: 'bad value!' },
    ];
    for (const headers of cases) {
      assert.deepEqual(await post(base, JSON.stringify({ environment: { A: '1' } }), headers), {
        status: 400,
        json: {
          error: `header ${DATA_BRIDGE_RESERVATION_HEADER} must name the reservation (1-128 of A-Z a-z 0-9 . _ -)`,
        },
      });
    }
    assert.equal(store.size, 0);
  });

  it('takes the next reservation once the instance restarted (a new server)', async () => {
    assert.equal((await post(base, JSON.stringify({ environment: { A: '1' } }))).status, 200);
    server.dispose();
    const restarted = new BridgeServer(new EnvironmentStore(new MemorySecretStorage(), logger), logger, {
      host: '127.0.0.1',
      port: 0,
      token: BRIDGE_TOKEN,
    });
    try {
      const next = `http://127.0.0.1:${(await restarted.listen()).port}`;
      const headers = { ...OPERATOR, [DATA_BRIDGE_RESERVATION_HEADER]: 'session-uid-2' };
      assert.equal((await post(next, JSON.stringify({ environment: { A: '2' } }), headers)).status, 200);
    } finally {
      restarted.dispose();
    }
  });

  it('answers 400 naming the problem, never echoing a value', async () => {
    const cases: [string, string][] = [
      [`{"environment": {"TOKEN": "${SECRET}"`, 'body is not valid JSON'],
      [`["${SECRET}"]`, 'body must be a JSON object, got an array'],
      [`{"environment": "${SECRET}"}`, 'field "environment" must be an object of strings, got a string'],
      [`{"environment": {"TOKEN": ["${SECRET}"]}}`, 'environment.TOKEN must be a string, got an array'],
      ['{}', 'field "environment" is missing'],
    ];
    for (const [body, error] of cases) {
      const res = await post(base, body);
      assert.deepEqual(res, { status: 400, json: { error } });
    }
    assert.equal(store.size, 0);
  });

  it('answers 413 over the size limit, whether declared or streamed', async () => {
    const big = JSON.stringify({ environment: { BIG: 'x'.repeat(2000) } });
    assert.deepEqual(await post(base, big), { status: 413, json: { error: 'body exceeds 1024 bytes' } });
    const streamed = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${base}/data`, {
        method: 'POST',
        headers: { 'transfer-encoding': 'chunked', ...OPERATOR },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      for (let i = 0; i < 4; i++) req.write('x'.repeat(500));
      req.end();
    });
    assert.equal(streamed, 413);
    assert.equal(store.size, 0);
  });

  it('answers 404 elsewhere and 405 for a wrong method', async () => {
    const missing = await fetch(`${base}/nope`);
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: 'no route for /nope' });
    const wrong = await fetch(`${base}/data`);
    assert.equal(wrong.status, 405);
    assert.deepEqual(await wrong.json(), { error: 'method not allowed, use POST' });
  });

  it('answers 500 when the values cannot be persisted', async () => {
    secrets.failWrites = true;
    const res = await post(base, JSON.stringify({ environment: { TOKEN: SECRET } }));
    assert.deepEqual(res, { status: 500, json: { error: 'the values are held in memory but could not be persisted' } });
  });

  it('holds GET /data?wait=… until the values are injected, or answers when the wait ends', async () => {
    const serving = new BridgeServer(store, logger, {
      host: '127.0.0.1',
      port: 0,
      token: BRIDGE_TOKEN,
      serveValues: true,
    });
    const { port } = await serving.listen();
    const source = `http://127.0.0.1:${port}`;
    const read = async (query: string, token = BRIDGE_TOKEN) => {
      const res = await fetch(`${source}/data${query}`, { headers: { authorization: `Bearer ${token}` } });
      return { status: res.status, json: (await res.json()) as Record<string, unknown> };
    };
    try {
      // Without a wait, or nothing injected within it: the values held so far (none), not injected.
      assert.deepEqual(await read(''), { status: 200, json: { environment: {}, injected: false } });
      let since = Date.now();
      assert.deepEqual(await read('?wait=1'), { status: 200, json: { environment: {}, injected: false } });
      assert.ok(Date.now() - since >= 900, 'held for the wait');
      // The token and the bounds are checked before any wait.
      assert.equal((await read('?wait=30', 'guessed-token-0000')).status, 403);
      for (const bad of ['?wait=61', '?wait=-1', '?wait=soon']) assert.equal((await read(bad)).status, 400, bad);
      // A waiting request answers as soon as the operator's post is stored.
      since = Date.now();
      const waiting = read('?wait=30');
      await new Promise((resolve) => setTimeout(resolve, 100));
      await post(source, JSON.stringify({ environment: { TOKEN: SECRET } }));
      assert.deepEqual(await waiting, { status: 200, json: { environment: { TOKEN: SECRET }, injected: true } });
      assert.ok(Date.now() - since < 5000, 'answered at the injection, not at the end of the wait');
      // Once injected, a wait answers at once.
      since = Date.now();
      assert.equal((await read('?wait=30')).json.injected, true);
      assert.ok(Date.now() - since < 1000);
    } finally {
      serving.dispose();
    }
  });

  it('lets go of waiting requests when it closes, and of a caller that hung up', async () => {
    const serving = new BridgeServer(store, logger, {
      host: '127.0.0.1',
      port: 0,
      token: BRIDGE_TOKEN,
      serveValues: true,
    });
    const { port } = await serving.listen();
    const headers = { authorization: `Bearer ${BRIDGE_TOKEN}` };
    const gone = new AbortController();
    const hungUp = fetch(`http://127.0.0.1:${port}/data?wait=30`, { headers, signal: gone.signal });
    const waiting = fetch(`http://127.0.0.1:${port}/data?wait=30`, { headers });
    await new Promise((resolve) => setTimeout(resolve, 100));
    gone.abort();
    await assert.rejects(hungUp);
    const since = Date.now();
    serving.dispose();
    await assert.rejects(waiting);
    assert.ok(Date.now() - since < 5000);
  });

  it('closes on dispose', async () => {
    server.dispose();
    await assert.rejects(fetch(`${base}/health`));
  });
});

describe('extension: DataBridge', () => {
  const local = (port: number): BridgeConfig => ({ enabled: true, host: '127.0.0.1', port, token: BRIDGE_TOKEN });
  const viaProcess = (processUrl: string): BridgeConfig => ({
    enabled: true,
    host: '127.0.0.1',
    port: 1,
    token: BRIDGE_TOKEN,
    processUrl,
  });

  function harness(config: BridgeConfig, secrets = new MemorySecretStorage()) {
    const logger = new MemoryLogger();
    const commands = new Map<string, (keys: unknown) => Promise<Environment>>();
    const registerCommand: RegisterCommand = (id, handler) => {
      commands.set(id, handler);
      return { dispose: () => commands.delete(id) };
    };
    const bridge = new DataBridge({
      config,
      secrets,
      logger,
      registerCommand,
      bindRetryMs: 0,
    });
    return { bridge, logger, commands, secrets };
  }

  it('stays inactive when disabled and says so once', async () => {
    const { bridge, logger, commands } = harness({ enabled: false, reason: 'DATA_BRIDGE_ENABLED is not set' });
    assert.equal(await bridge.start(), undefined);
    assert.deepEqual(logger.lines, ['info data bridge inactive: DATA_BRIDGE_ENABLED is not set']);
    assert.equal(commands.size, 0);
    bridge.dispose();
  });

  it('reports an invalid port without throwing', async () => {
    const { bridge, logger } = harness({
      enabled: true,
      error: 'DATA_BRIDGE_PORT must be an integer from 1 to 65535, got "x"',
    });
    assert.equal(await bridge.start(), undefined);
    assert.deepEqual(logger.lines, [
      'error data bridge not started: DATA_BRIDGE_PORT must be an integer from 1 to 65535, got "x"',
    ]);
  });

  it('reports a port it cannot bind without throwing', async () => {
    const blocker = http.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as AddressInfo;
    const { bridge, logger } = harness(local(port));
    try {
      assert.equal(await bridge.start(), undefined);
      assert.equal(
        logger.lines.at(-1),
        `error data bridge not serving: cannot listen on 127.0.0.1:${port}: EADDRINUSE`,
      );
    } finally {
      bridge.dispose();
      blocker.close();
    }
  });

  it('waits for a busy port to free up', async () => {
    const blocker = http.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as AddressInfo;
    const logger = new MemoryLogger();
    const bridge = new DataBridge({
      config: local(port),
      secrets: new MemorySecretStorage(),
      logger,
      registerCommand: () => ({ dispose: () => undefined }),
      bindRetryMs: 5000,
    });
    const started = bridge.start();
    setTimeout(() => blocker.close(), 300);
    try {
      assert.equal(await started, port);
      assert.ok(logger.lines.includes(`warn port ${port} is in use; retrying`));
    } finally {
      bridge.dispose();
    }
  });

  it('restores, serves and answers dataBridge.getEnv with only present keys', async () => {
    const secrets = new MemorySecretStorage();
    secrets.data.set(SECRET_KEY, JSON.stringify({ OLD: 'kept' }));
    const { bridge, logger, commands } = harness(local(0), secrets);
    const port = await bridge.start();
    assert.ok(port);
    try {
      await post(`http://127.0.0.1:${port}`, JSON.stringify({ environment: { TOKEN: SECRET } }));
      const getEnv = commands.get('dataBridge.getEnv');
      assert.ok(getEnv);
      assert.deepEqual(await getEnv(['TOKEN', 'OLD', 'MISSING']), { TOKEN: SECRET, OLD: 'kept' });
      await assert.rejects(getEnv('TOKEN'), /expects an array of key names, got a string/);
      assert.ok(logger.lines.includes('info getEnv: 2 of 3 key(s) present; missing: MISSING'));
      assert.deepEqual(await getEnv(['constructor']), {});
      assert.ok(logger.lines.includes('info getEnv: 0 of 1 key(s) present; missing: constructor'));
      assertNoSecretIn(logger.lines);
    } finally {
      bridge.dispose();
    }
    assert.equal(commands.size, 0);
    await assert.rejects(fetch(`http://127.0.0.1:${port}/health`));
  });

  it('with a bridge process, serves nothing and answers dataBridge.getEnv from what the process holds', async () => {
    // The process: the real server, serving its values back to this host with the token.
    const processLogger = new MemoryLogger();
    const processStore = new EnvironmentStore(new MemorySecretStorage(), processLogger);
    const bridgeProcess = new BridgeServer(processStore, processLogger, {
      host: '127.0.0.1',
      port: 0,
      token: BRIDGE_TOKEN,
      serveValues: true,
    });
    const { port } = await bridgeProcess.listen();
    const source = `http://127.0.0.1:${port}`;
    const secrets = new MemorySecretStorage();
    const { bridge, logger, commands } = harness(viaProcess(source), secrets);
    try {
      assert.equal(await bridge.start(), port, 'no port of its own: the process serves');
      const getEnv = commands.get('dataBridge.getEnv')!;
      assert.deepEqual(await getEnv(['TOKEN']), {}, 'nothing injected yet');
      await post(source, JSON.stringify({ environment: { TOKEN: SECRET } }));
      assert.deepEqual(await getEnv(['TOKEN', 'MISSING']), { TOKEN: SECRET });
      assert.deepEqual(JSON.parse(secrets.data.get(SECRET_KEY)!), { TOKEN: SECRET }, 'kept in secret storage');
      await assert.rejects(getEnv('TOKEN'), /expects an array of key names, got a string/);
      // The values go back to the token's holder only.
      assert.equal((await fetch(`${source}/data`)).status, 401);
      assert.equal((await fetch(`${source}/data`, { headers: { authorization: 'Bearer guessed' } })).status, 403);
      assertNoSecretIn([...logger.lines, ...processLogger.lines]);
    } finally {
      bridge.dispose();
      bridgeProcess.dispose();
    }
    // The process gone, the secret storage still answers.
    const again = harness(viaProcess(source), secrets);
    await again.bridge.start();
    assert.deepEqual(await again.commands.get('dataBridge.getEnv')!(['TOKEN']), { TOKEN: SECRET });
    assert.ok(again.logger.lines.some((line) => line.startsWith('warn the bridge process did not answer')));
    again.bridge.dispose();
  });
});
