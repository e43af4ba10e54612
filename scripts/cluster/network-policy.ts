// The real node's NetworkPolicy controller: kube-router (built from Go modules, build.sh network-policy)
// with its firewall only. The CNI bridge routes the pods and nothing proxies Services, so its router,
// Service proxy and CNI stay off. It enforces the policies on the traffic of the node's pods with
// iptables chains (KUBE-ROUTER-*, KUBE-NWPLCY-*, KUBE-POD-FW-*, removed with the node's other KUBE-
// chains) and ipsets, which stopNetworkPolicyController removes: the ones absent before it started.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { isAlive, startDetached, waitFor } from './processes.js';

const run = promisify(execFile);

/** The ipsets of the machine, by name. */
export async function ipsets(): Promise<string[]> {
  const { stdout } = await run('ipset', ['list', '-n']);
  return stdout.split('\n').filter(Boolean);
}

export interface NetworkPolicyControllerOptions {
  /** The directory of kube-router. */
  bin: string;
  kubeconfig: string;
  nodeName: string;
  /** Its health endpoint, on the machine's addresses. */
  healthPort: number;
}

/** Starts kube-router's firewall for `nodeName` and returns its pid once it reports healthy. */
export async function startNetworkPolicyController(
  root: string,
  options: NetworkPolicyControllerOptions,
): Promise<number> {
  const pid = startDetached(path.join(root, 'kube-router.log'), path.join(options.bin, 'kube-router'), [
    `--kubeconfig=${options.kubeconfig}`,
    `--hostname-override=${options.nodeName}`,
    '--run-firewall=true',
    '--run-router=false',
    '--run-service-proxy=false',
    '--enable-cni=false',
    `--health-port=${options.healthPort}`,
    '--metrics-port=0',
  ]);
  await waitFor(
    'kube-router',
    async () => (await fetch(`http://127.0.0.1:${options.healthPort}/healthz`)).ok,
    60_000,
    pid,
  );
  return pid;
}

/** Ends kube-router (SIGKILL: the node's stop removes its chains, then removeIpsets its sets). */
export async function stopNetworkPolicyController(pid: number | undefined): Promise<void> {
  if (pid && isAlive(pid)) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // Already gone with its group.
    }
    await waitFor('kube-router to end', async () => !isAlive(pid), 5_000);
  }
}

/** Destroys the ipsets absent from `before` (after the chains that match them are gone). */
export async function removeIpsets(before: string[]): Promise<void> {
  const ours = (await ipsets().catch(() => [])).filter((name) => !before.includes(name));
  for (const name of ours) await run('ipset', ['destroy', name]).catch(() => undefined);
}
