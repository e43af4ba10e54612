// Attack 2 of issue 15: the chart's NetworkPolicy selected pods by app.kubernetes.io/component, which
// only warm instances carried; lazy session pods (code-server without authentication on port 3000)
// and sidecar pods were selected by no policy, so any pod of the cluster reached them. Every pod the
// operator makes now carries the labels the policies select, and the chart denies everything in the
// namespace by default. The local cluster has no network plugin that enforces policies, so this
// checks what the API server can tell: which real pods each rendered policy selects (the API server
// evaluates the selectors), and that the policies are accepted.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import YAML from 'yaml';
import { ensureBinaries } from '../../scripts/cluster/control-plane.js';
import { eventually } from '../support/kube.js';
import { appDefinitionSpec, createSession, running, waitForSession } from '../support/operator.js';
import { useStack } from '../support/stack.js';

const run = promisify(execFile);
const chart = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../charts/ide-cloud');
const ISSUER = [
  '--set',
  'identityProvider.issuer=https://login.example.org/realms/ide-cloud',
  '--set',
  'identityProvider.sessionClient.secret=secret-of-the-session-client',
];
const RELEASE = 'rel';
const policyName = (suffix: string) => `${RELEASE}-ide-cloud-${suffix}`;

/** A rendered NetworkPolicy as YAML gives it (field names as in the manifest, not the client's models). */
interface Policy extends k8s.KubernetesObject {
  spec: {
    podSelector: k8s.V1LabelSelector;
    policyTypes?: string[];
    ingress?: { from?: unknown[]; ports?: { port?: number | string }[] }[];
    egress?: unknown[];
  };
}

/** A LabelSelector as the API server's label selector string ('' selects every pod). */
function selectorString(selector: k8s.V1LabelSelector): string {
  const terms = Object.entries(selector.matchLabels ?? {}).map(([key, value]) => `${key}=${value}`);
  for (const e of selector.matchExpressions ?? []) {
    const values = `(${(e.values ?? []).join(',')})`;
    if (e.operator === 'In') terms.push(`${e.key} in ${values}`);
    else if (e.operator === 'NotIn') terms.push(`${e.key} notin ${values}`);
    else if (e.operator === 'Exists') terms.push(e.key);
    else if (e.operator === 'DoesNotExist') terms.push(`!${e.key}`);
    else throw new Error(`unknown selector operator ${e.operator}`);
  }
  return terms.join(',');
}

describe('security: every pod the operator makes is inside the NetworkPolicies (2)', function () {
  this.timeout(300_000);
  let helmBin: string;
  const stack = useStack('sec-netpol', {
    // A warm pool of one instance with a sidecar, and a lazy app (no data bridge) with a sidecar.
    apps: [
      appDefinitionSpec('pooled', {
        minInstances: 1,
        sidecars: [{ name: 'cache', image: 'redis:7', port: 6379, mountWorkspace: false }],
      }),
      appDefinitionSpec('lazy', {
        options: {},
        sidecars: [{ name: 'db', image: 'postgres:16', port: 5432, mountWorkspace: false }],
      }),
    ],
    setUp: async () => {
      helmBin = path.join(await ensureBinaries('helm'), 'helm');
    },
    operator: { eagerStart: true, sessionsPerUser: 5 },
  });

  const helm = async (...args: string[]) =>
    (await run(helmBin, args, { env: { ...process.env, KUBECONFIG: stack.cluster.kubeconfig }, maxBuffer: 32 << 20 }))
      .stdout;
  const policies = async (...args: string[]) =>
    YAML.parseAllDocuments(await helm('template', RELEASE, chart, '--namespace', stack.namespace, ...ISSUER, ...args))
      .map((doc) => doc.toJS() as Policy | null)
      .filter((doc): doc is Policy => doc?.kind === 'NetworkPolicy');
  /** Names of the pods of the namespace the API server finds with a policy's pod selector. */
  const selected = async (policy: Policy) =>
    (
      await stack.core.listNamespacedPod({
        namespace: stack.namespace,
        labelSelector: selectorString(policy.spec.podSelector),
      })
    ).items
      .map((p) => p.metadata!.name!)
      .sort();

  before(async () => {
    await createSession(stack.resources, 'lazy-1', { user: 'alice@example.com', appDefinition: 'lazy' });
    const session = await waitForSession(stack.resources, 'lazy-1', running);
    assert.notEqual(session.status?.startStrategy, 'eager', 'a lazy pod (no data bridge)');
  });

  it('selects every pod of lazy sessions, warm instances and sidecars: default deny, then only the allowed ports', async () => {
    // The pods the operator's Deployments made: the lazy session's IDE and sidecar, the warm
    // instance's IDE and sidecar. The namespace holds nothing else.
    const pods = await eventually(async () => {
      const items = (await stack.core.listNamespacedPod({ namespace: stack.namespace })).items.filter(
        (p) => !p.metadata?.deletionTimestamp,
      );
      const apps = items.map((p) => p.metadata!.labels!.app!).sort();
      assert.equal(items.length, 4, `pods: ${apps.join(' ')}`);
      assert.ok(apps.includes('pooled-pool-1') && apps.includes('pooled-pool-1-cache'), apps.join(' '));
      assert.ok(apps.includes('lazy-1-db') && apps.some((a) => a.startsWith('lazy-1-')), apps.join(' '));
      return items;
    }, 60_000);
    const all = pods.map((p) => p.metadata!.name!).sort();
    const ide = pods.filter((p) => !p.metadata!.labels!.app!.match(/-(cache|db)$/)).map((p) => p.metadata!.name!);
    const sidecars = all.filter((name) => !ide.includes(name));
    assert.equal(ide.length, 2);

    const rendered = await policies();
    const byName = (suffix: string) => {
      const policy = rendered.find((p) => p.metadata?.name === policyName(suffix));
      assert.ok(policy, `policy ${policyName(suffix)} rendered`);
      return policy;
    };

    const deny = byName('default-deny');
    assert.deepEqual(deny.spec.policyTypes, ['Ingress', 'Egress']);
    assert.equal(deny.spec.ingress, undefined);
    assert.equal(deny.spec.egress, undefined);
    assert.deepEqual(await selected(deny), all, 'the default deny selects every pod');

    // IDE pods: in only to the auth proxy (from the ingress controller), the bridge and the proxy's
    // admission (from the operator).
    const sessions = byName('sessions');
    assert.deepEqual(await selected(sessions), [...ide].sort(), 'lazy and warm IDE pods are selected');
    const ports = (sessions.spec.ingress ?? []).flatMap((rule) => {
      assert.ok(rule.from && rule.from.length > 0, 'every rule names its peers');
      return (rule.ports ?? []).map((p) => p.port);
    });
    assert.deepEqual(ports.sort(), [16281, 'admission', 'http'].sort(), 'never the IDE port (3000)');

    assert.deepEqual(await selected(byName('sidecars')), sidecars, 'sidecar pods are selected');
    assert.deepEqual(await selected(byName('session-egress')), all, 'every session pod has its egress limited');

    // No pod of the operator's is left to the platform's policies (or to none).
    for (const platform of ['service', 'landing-page', 'operator'])
      assert.deepEqual(await selected(byName(platform)), [], platform);
  });

  it("keeps the cloud's metadata service (link-local) and the cluster's networks out of the sessions' egress (issue 27, item 3)", async () => {
    /** The ipBlock of the session egress rule that names sessionEgress.cidr. */
    const block = async (...args: string[]) => {
      const egress = (await policies(...args)).find((p) => p.metadata?.name === policyName('session-egress'));
      const rules = (egress?.spec.egress ?? []) as { to?: { ipBlock?: { cidr: string; except?: string[] } }[] }[];
      return rules.flatMap((rule) => rule.to ?? []).find((peer) => peer.ipBlock)!.ipBlock!;
    };
    assert.deepEqual(await block(), { cidr: '0.0.0.0/0', except: ['169.254.0.0/16'] }, 'by default');
    const cluster = [
      ...['--set', 'networkPolicy.cluster.podCidrs={10.244.0.0/16,fd00:10::/64}'],
      ...['--set', 'networkPolicy.cluster.serviceCidrs={10.96.0.0/12}'],
      ...['--set', 'networkPolicy.sessionEgress.except={192.168.0.0/16}'],
    ];
    assert.deepEqual(await block(...cluster), {
      cidr: '0.0.0.0/0',
      except: ['192.168.0.0/16', '169.254.0.0/16', '10.244.0.0/16', '10.96.0.0/12'],
    });
    // IPv6: its own link-local range; only the ranges that lie strictly inside the cidr (the API server's rule).
    const ipv6 = await block(...cluster, '--set', 'networkPolicy.sessionEgress.cidr=::/0');
    assert.deepEqual(ipv6.except, ['192.168.0.0/16', 'fe80::/10', 'fd00:10::/64']);
    const narrow = await block(...cluster, '--set', 'networkPolicy.sessionEgress.cidr=10.0.0.0/8');
    assert.deepEqual(narrow.except, ['192.168.0.0/16', '10.244.0.0/16', '10.96.0.0/12']);
    // Opting out is explicit, also for a cidr inside the link-local range.
    const optOut = ['--set', 'networkPolicy.sessionEgress.allowLinkLocal=true'];
    assert.deepEqual(await block(...optOut), { cidr: '0.0.0.0/0' });
    const linkLocal = ['--set', 'networkPolicy.sessionEgress.cidr=169.254.169.254/32'];
    await assert.rejects(policies(...linkLocal), /allowLinkLocal=true/);
    assert.deepEqual(await block(...linkLocal, ...optOut), { cidr: '169.254.169.254/32' });
  });

  it('the rendered policies are accepted by the API server, and the chart lints with them on and off', async () => {
    const objects = k8s.KubernetesObjectApi.makeApiClient(stack.kc);
    const custom = [
      '--set',
      'networkPolicy.apiServer.cidrs={10.0.0.1/32}',
      '--set',
      'networkPolicy.sessionEgress.except={10.0.0.0/8,172.16.0.0/12}',
      '--set',
      'networkPolicy.cluster.podCidrs={10.244.0.0/16}',
      '--set',
      'networkPolicy.cluster.serviceCidrs={10.96.0.0/12}',
      '--set',
      'networkPolicy.serviceIngressFrom[0].namespaceSelector.matchLabels.name=monitoring',
    ];
    for (const args of [[], custom]) {
      const rendered = await policies(...args);
      assert.equal(rendered.length, 8);
      for (const policy of rendered) {
        // Through the client's model (`from` becomes `_from`): sent as parsed, the peers would be dropped.
        const body = k8s.loadYaml<k8s.V1NetworkPolicy>(
          YAML.stringify({ ...policy, metadata: { ...policy.metadata, namespace: stack.namespace } }),
        );
        const accepted = (await objects.create(body, undefined, 'All').catch((error: unknown) => {
          throw new Error(`${policy.metadata?.name} refused: ${(error as k8s.ApiException<string>).body}`);
        })) as k8s.V1NetworkPolicy;
        // What the API server validated has every peer the chart rendered.
        const peers = (rules?: { from?: unknown[]; _from?: unknown[] }[]) =>
          (rules ?? []).map((rule) => (rule.from ?? rule._from ?? []).length);
        assert.deepEqual(peers(accepted.spec?.ingress), peers(policy.spec.ingress), policy.metadata?.name);
      }
    }
    assert.deepEqual(await policies('--set', 'networkPolicy.enabled=false'), []);
    await helm('lint', '--strict', chart, ...ISSUER);
    await helm('lint', '--strict', chart, ...ISSUER, '--set', 'networkPolicy.enabled=false');
    await helm('lint', '--strict', chart, ...ISSUER, ...custom);
  });
});
