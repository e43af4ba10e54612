import assert from 'node:assert/strict';
import { DEFAULT_PORT, readBridgeConfig } from '../src/config.js';

const TOKEN = 'instance-token-3f9c2b7e1d5a';

describe('extension: readBridgeConfig', () => {
  it('is enabled only by 1 or true', () => {
    for (const value of ['1', 'true', 'TRUE', ' true ']) {
      assert.deepEqual(readBridgeConfig({ DATA_BRIDGE_ENABLED: value, DATA_BRIDGE_TOKEN: TOKEN }), {
        enabled: true,
        host: '0.0.0.0',
        port: DEFAULT_PORT,
        token: TOKEN,
      });
    }
    for (const value of ['0', 'false', 'yes', '', 'on']) {
      assert.deepEqual(readBridgeConfig({ DATA_BRIDGE_ENABLED: value }), {
        enabled: false,
        reason: 'DATA_BRIDGE_ENABLED is not 1 or true',
      });
    }
    assert.deepEqual(readBridgeConfig({}), { enabled: false, reason: 'DATA_BRIDGE_ENABLED is not set' });
  });

  it('reads the port, default 16281', () => {
    assert.equal(DEFAULT_PORT, 16281);
    const on = { DATA_BRIDGE_ENABLED: '1', DATA_BRIDGE_TOKEN: TOKEN };
    assert.deepEqual(readBridgeConfig({ ...on, DATA_BRIDGE_PORT: '8099' }), {
      enabled: true,
      host: '0.0.0.0',
      port: 8099,
      token: TOKEN,
    });
    assert.deepEqual(readBridgeConfig({ ...on, DATA_BRIDGE_PORT: '' }), {
      enabled: true,
      host: '0.0.0.0',
      port: DEFAULT_PORT,
      token: TOKEN,
    });
  });

  it('turns an invalid port into a clear error', () => {
    for (const value of ['0', '65536', 'abc', '80.5', '-1', '123456']) {
      assert.deepEqual(
        readBridgeConfig({ DATA_BRIDGE_ENABLED: 'true', DATA_BRIDGE_PORT: value, DATA_BRIDGE_TOKEN: TOKEN }),
        {
          enabled: true,
          error: `DATA_BRIDGE_PORT must be an integer from 1 to 65535, got "${value}"`,
        },
      );
    }
  });

  it('needs the token the operator authenticates with: without it, no port opens', () => {
    assert.deepEqual(readBridgeConfig({ DATA_BRIDGE_ENABLED: 'true' }), {
      enabled: true,
      error: 'DATA_BRIDGE_TOKEN is not set (the secret the operator authenticates with)',
    });
    assert.deepEqual(readBridgeConfig({ DATA_BRIDGE_ENABLED: 'true', DATA_BRIDGE_TOKEN: 'short' }), {
      enabled: true,
      error: 'DATA_BRIDGE_TOKEN is shorter than 16 characters (the secret the operator authenticates with)',
    });
  });

  it('ignores an allowed-users file (the proxy writes its own) and reads where a bridge process serves, on loopback only', () => {
    const on = { DATA_BRIDGE_ENABLED: 'true', DATA_BRIDGE_TOKEN: TOKEN };
    assert.deepEqual(
      readBridgeConfig({
        ...on,
        DATA_BRIDGE_USERS_FILE: '/var/run/ide-cloud/auth-proxy/users',
        DATA_BRIDGE_URL: 'http://127.0.0.1:16281',
      }),
      {
        enabled: true,
        host: '0.0.0.0',
        port: DEFAULT_PORT,
        token: TOKEN,
        processUrl: 'http://127.0.0.1:16281',
      },
    );
    for (const url of ['http://attacker.example:16281', 'https://127.0.0.1:16281', 'http://127.0.0.1.example:1']) {
      assert.deepEqual(readBridgeConfig({ ...on, DATA_BRIDGE_URL: url }), {
        enabled: true,
        error: 'DATA_BRIDGE_URL must be http://127.0.0.1:<port> or http://localhost:<port>',
      });
    }
  });
});
