// configureClient reads the cluster's CA and the client certificate once: no request reads a file.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { configureClient } from '../../src/kube/client.js';

describe('kube client: certificates read once', () => {
  it('keeps the CA, certificate and key as data, so requests go on when the files are gone', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'kube-certs-'));
    const file = (name: string, text: string) => {
      writeFileSync(path.join(dir, name), text);
      return path.join(dir, name);
    };
    const kc = new k8s.KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:1', caFile: file('ca.crt', 'the CA') }],
      users: [{ name: 'u', certFile: file('tls.crt', 'the cert'), keyFile: file('tls.key', 'the key'), token: 't' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    configureClient(kc, 'ide-cloud-test');
    rmSync(dir, { recursive: true });
    const base64 = (text: string) => Buffer.from(text).toString('base64');
    assert.equal(kc.getCurrentCluster()?.caData, base64('the CA'));
    assert.equal(kc.getCurrentCluster()?.caFile, undefined);
    assert.deepEqual(
      [kc.getCurrentUser()?.certData, kc.getCurrentUser()?.keyData, kc.getCurrentUser()?.token],
      [base64('the cert'), base64('the key'), 't'],
    );
    const options: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(options);
    assert.deepEqual(
      [options.ca?.toString(), options.cert?.toString(), options.key?.toString()],
      ['the CA', 'the cert', 'the key'],
    );
  });
});
