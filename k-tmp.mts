import * as k8s from '@kubernetes/client-node';
const kc = new k8s.KubeConfig(); kc.loadFromFile('/kubeconfig');
const s = await kc.makeApiClient(k8s.CustomObjectsApi).listNamespacedCustomObject({ group: 'ide.cloud', version: 'v1beta10', namespace: 'ide-cloud', plural: 'sessions' }) as any;
for (const x of s.items) console.log(x.metadata.name, x.status?.phase, JSON.stringify(x.status?.conditions?.map((c: any) => [c.type, c.status, c.reason, c.message])));
const pods = await kc.makeApiClient(k8s.CoreV1Api).listNamespacedPod({ namespace: 'ide-cloud' });
for (const p of pods.items) console.log(p.metadata?.name, p.status?.phase, JSON.stringify(p.status?.conditions?.map(c => [c.type, c.status])));
const d = await kc.makeApiClient(k8s.AppsV1Api).listNamespacedDeployment({ namespace: 'ide-cloud' });
for (const x of d.items) console.log(x.metadata?.name, JSON.stringify(x.status));
