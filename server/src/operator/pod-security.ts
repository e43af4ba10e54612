/**
 * The security context of the pods the operator makes for sessions: the Kubernetes "restricted" Pod
 * Security profile (non-root, no privilege escalation, every capability dropped, the runtime's default
 * seccomp profile), so the student's code gets no more of the node than it needs and a namespace that
 * enforces the profile admits the pods. The session images run as numeric non-root users (IDE 10001,
 * proxy 65532). An app definition whose IDE image or sidecar must start as root (or names its user,
 * which the kubelet cannot check) says so with `podSecurity: baseline`: that container alone then keeps
 * the runtime's defaults; the seccomp profile stays, and the proxy is always restricted.
 */
import type * as k8s from '@kubernetes/client-node';
import type { PodSecurity } from '../model/app-definition.js';

/** The pod's part: the runtime's default seccomp profile, whatever its containers ask. */
export function sessionPodSecurityContext(): k8s.V1PodSecurityContext {
  return { seccompProfile: { type: 'RuntimeDefault' } };
}

/** A container's part: restricted unless `level` is baseline (then nothing: the runtime's defaults). */
export function containerSecurity(level: PodSecurity = 'restricted'): Pick<k8s.V1Container, 'securityContext'> {
  if (level === 'baseline') return {};
  return { securityContext: { runAsNonRoot: true, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } };
}
