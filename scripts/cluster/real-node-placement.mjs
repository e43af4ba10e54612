#!/usr/bin/env node
// A Helm post-renderer that puts the pods of every Deployment, StatefulSet and DaemonSet it renders on
// the real node, as a platform's post-renderer would place a chart on its own nodes; the chart itself
// stays as published. `helm install --post-renderer scripts/cluster/real-node-placement.mjs
// --post-renderer-args '<REAL_NODE_PLACEMENT of real-node.ts as JSON>'`. Manifests on stdin, out on stdout.
import { readFileSync } from 'node:fs';
import process from 'node:process';
import { parseAllDocuments, stringify } from 'yaml';

const PLACEMENT = JSON.parse(process.argv[2] ?? 'null');
if (!PLACEMENT?.nodeSelector || !PLACEMENT?.tolerations) {
  process.stderr.write('usage: real-node-placement.mjs \'{"nodeSelector": {...}, "tolerations": [...]}\'\n');
  process.exit(2);
}
const WORKLOADS = new Set(['Deployment', 'StatefulSet', 'DaemonSet']);

const documents = parseAllDocuments(readFileSync(0, 'utf8'))
  .map((document) => document.toJS())
  .filter((manifest) => manifest);
for (const manifest of documents) {
  const pod = WORKLOADS.has(manifest.kind) ? manifest.spec?.template?.spec : undefined;
  if (!pod) continue;
  pod.nodeSelector = { ...pod.nodeSelector, ...PLACEMENT.nodeSelector };
  pod.tolerations = [...(pod.tolerations ?? []), ...PLACEMENT.tolerations];
}
process.stdout.write(documents.map((manifest) => stringify(manifest)).join('---\n'));
