// The real node's dynamic volume provisioner: Rancher's local-path-provisioner (built from Go modules,
// build.sh storage), as kind and k3s ship it, run as a plain process with the control plane's
// kubeconfig. The StorageClass STORAGE_CLASS is the cluster's default: a claim without a class (the
// operator leaves storageClassName out when the chart's operator.storage.storageClassName is '') gets
// it at creation (the DefaultStorageClass admission). Binding waits for the first pod that uses the
// claim (WaitForFirstConsumer): the scheduler's VolumeBinding plugin names that pod's node on the claim
// (control-plane.ts enables the volume plugins with the real node), and the provisioner makes the
// volume there — a directory under volumesDir(root), the real node's own directory, made by a helper
// pod on the node (nodeName set, every taint tolerated) that runs the setup script of STORAGE_NAMESPACE's
// ConfigMap in STORAGE_HELPER_IMAGE (scripts/images/build.sh local-path-helper). A volume's directory
// is mode 0777 (root's; hostPath volumes take no fsGroup), so a pod's non-root user writes to its root.
// Deleting a claim deletes its volume (reclaimPolicy Delete): the teardown script removes the directory.
//
// Only the real node has volumes: the class's allowed topology is that node, so a pod on kwok's node
// whose claim is unbound stays unschedulable instead of being given a volume no kubelet mounts.
// stopStorageProvisioner ends the process; the volumes go with the node's directory at `down`.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { isAlive, startDetached, waitFor } from './processes.js';

/** The StorageClass of the real node's volumes, the cluster's default. */
export const STORAGE_CLASS = 'local-path';
export const STORAGE_PROVISIONER = 'rancher.io/local-path';
/** The namespace of the provisioner's ConfigMap, ServiceAccount and helper pods. */
export const STORAGE_NAMESPACE = 'local-path-storage';
/** The image of the helper pods (scripts/images/build.sh local-path-helper), imported into the node. */
export const STORAGE_HELPER_IMAGE = 'docker.io/ide-cloud/local-path-helper:0.1.0';
const DEFAULT_CLASS_ANNOTATION = 'storageclass.kubernetes.io/is-default-class';
const CONFIG_MAP = 'local-path-config';
const SERVICE_ACCOUNT = 'local-path-provisioner-service-account';

/** Where the volumes are, on the host: `<volumes>/<pv>_<namespace>_<claim>`. */
export function volumesDir(root: string): string {
  return path.join(root, 'volumes');
}

/** The provisioner's configuration: every volume of `nodeName` under `volumes`, none elsewhere. */
function provisionerConfig(nodeName: string, volumes: string): string {
  return JSON.stringify({ nodePathMap: [{ node: nodeName, paths: [volumes] }] }, null, 2);
}

/**
 * The scripts the helper pods run (VOL_DIR is the volume's directory, mounted at the same path) and
 * the helper pod's template; the provisioner adds nodeName, the tolerations, the volumes and the command.
 */
function configMapData(helperImage: string): Record<string, string> {
  return {
    setup: ['#!/bin/sh', 'set -eu', 'mkdir -p "$VOL_DIR"', 'chmod 0777 "$VOL_DIR"', ''].join('\n'),
    teardown: ['#!/bin/sh', 'set -eu', 'rm -rf "$VOL_DIR"', ''].join('\n'),
    'helperPod.yaml': [
      'apiVersion: v1',
      'kind: Pod',
      'metadata:',
      '  name: helper-pod',
      'spec:',
      '  automountServiceAccountToken: false',
      '  terminationGracePeriodSeconds: 1',
      '  containers:',
      '  - name: helper-pod',
      `    image: ${helperImage}`,
      '    imagePullPolicy: Never',
      '',
    ].join('\n'),
  };
}

export interface StorageProvisionerOptions {
  /** The directory of local-path-provisioner. */
  bin: string;
  kubeconfig: string;
  kc: k8s.KubeConfig;
  /** The node whose volumes it makes (the real node). */
  nodeName: string;
}

/**
 * Creates the provisioner's namespace, ConfigMap, ServiceAccount and the default StorageClass, starts
 * local-path-provisioner and returns its pid (record it, then wait for storageProvisionerReady).
 */
export async function startStorageProvisioner(root: string, options: StorageProvisionerOptions): Promise<number> {
  const core = options.kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespace({ body: { metadata: { name: STORAGE_NAMESPACE } } });
  await core.createNamespacedServiceAccount({
    namespace: STORAGE_NAMESPACE,
    body: { metadata: { name: SERVICE_ACCOUNT }, automountServiceAccountToken: false },
  });
  await core.createNamespacedConfigMap({
    namespace: STORAGE_NAMESPACE,
    body: { metadata: { name: CONFIG_MAP }, data: configMapData(STORAGE_HELPER_IMAGE) },
  });
  await options.kc.makeApiClient(k8s.StorageV1Api).createStorageClass({
    body: {
      metadata: { name: STORAGE_CLASS, annotations: { [DEFAULT_CLASS_ANNOTATION]: 'true' } },
      provisioner: STORAGE_PROVISIONER,
      reclaimPolicy: 'Delete',
      volumeBindingMode: 'WaitForFirstConsumer',
      allowedTopologies: [{ matchLabelExpressions: [{ key: 'kubernetes.io/hostname', values: [options.nodeName] }] }],
    },
  });
  // A file name ending in .json: the provisioner reads it as a file (anything else as the JSON itself).
  const config = path.join(root, 'local-path-provisioner.json');
  await writeFile(config, provisionerConfig(options.nodeName, volumesDir(root)));
  return startDetached(
    logFile(root),
    path.join(options.bin, 'local-path-provisioner'),
    [
      'start',
      `--config=${config}`,
      `--provisioner-name=${STORAGE_PROVISIONER}`,
      `--namespace=${STORAGE_NAMESPACE}`,
      `--configmap-name=${CONFIG_MAP}`,
      `--service-account-name=${SERVICE_ACCOUNT}`,
    ],
    { KUBECONFIG: options.kubeconfig },
  );
}

const logFile = (root: string): string => path.join(root, 'local-path-provisioner.log');

/** Returns once the provisioner's controller has started (it serves no health endpoint, but logs it). */
export async function storageProvisionerReady(root: string, pid: number): Promise<void> {
  await waitFor(
    'local-path-provisioner',
    async () => (await readFile(logFile(root), 'utf8')).includes('Started provisioner controller'),
    60_000,
    pid,
  );
}

/** Ends local-path-provisioner (SIGKILL: what it made on the machine is under the node's directory). */
export async function stopStorageProvisioner(pid: number | undefined): Promise<void> {
  if (pid && isAlive(pid)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone with its group.
    }
    await waitFor('local-path-provisioner to end', async () => !isAlive(pid), 5_000);
  }
}
