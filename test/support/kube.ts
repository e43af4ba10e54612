import { randomBytes } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';

/** A fresh namespace per suite keeps suites independent on the one shared control plane. */
export async function createTestNamespace(kc: k8s.KubeConfig, prefix: string): Promise<string> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await core.createNamespace({ body: { metadata: { name, labels: { 'ide-cloud.io/test': 'true' } } } });
  // Pods are refused until the service-account controller has made the namespace's default account.
  await eventually(async () => {
    await core.readNamespacedServiceAccount({ name: 'default', namespace: name });
  }, 30_000);
  return name;
}

export async function deleteTestNamespace(kc: k8s.KubeConfig, name: string): Promise<void> {
  await kc
    .makeApiClient(k8s.CoreV1Api)
    .deleteNamespace({ name })
    .catch(() => undefined);
}

/**
 * Checks `check` over `durationMs` (at least twice): for what must not happen, such as a write due a
 * known delay after a step. The first failure is thrown.
 */
export async function consistently(
  check: () => Promise<void> | void,
  durationMs: number,
  intervalMs = 100,
): Promise<void> {
  const end = Date.now() + durationMs;
  do {
    await check();
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  } while (Date.now() <= end);
  await check();
}

/** Retries `check` until it stops throwing or the deadline passes; the last error is rethrown. */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 20_000, intervalMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, intervalMs));
    }
  }
}
