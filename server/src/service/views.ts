import type { AppDefinition } from '../model/app-definition.js';
import type {
  AdminAppDefinitionItem,
  AppDefinitionItem,
  AppDefinitionScaling,
  Performance,
  SessionItem,
  WorkspaceItem,
} from '../model/requests.js';
import type { Session } from '../model/session.js';
import type { Workspace } from '../model/workspace.js';

/**
 * What the listings show of each resource (DESIGN.md). Items are built field by field from an allow
 * list, so env values, session secrets and tokens can never reach a listing.
 */
function timestamp(value: string | Date | undefined): string | undefined {
  if (value === undefined) return undefined;
  return value instanceof Date ? value.toISOString() : value;
}

export function toWorkspaceItem(workspace: Workspace, active: boolean): WorkspaceItem {
  return {
    name: workspace.metadata.name,
    label: workspace.spec.label,
    appDefinition: workspace.spec.appDefinition,
    user: workspace.spec.user,
    active,
    creationTimestamp: timestamp(workspace.metadata.creationTimestamp),
  };
}

export function toSessionItem(session: Session): SessionItem {
  return {
    name: session.metadata.name,
    workspace: session.spec.workspace,
    appDefinition: session.spec.appDefinition,
    user: session.spec.user,
    url: session.status?.url,
    phase: session.status?.phase,
    startStrategy: session.status?.startStrategy,
    creationTimestamp: timestamp(session.metadata.creationTimestamp),
    lastActivity: session.status?.lastActivity,
  };
}

export function toAppDefinitionItem(definition: AppDefinition): AppDefinitionItem {
  const s = definition.spec;
  return {
    name: definition.metadata.name,
    image: s.image,
    requestsMemory: s.requestsMemory,
    requestsCpu: s.requestsCpu,
    limitsMemory: s.limitsMemory,
    limitsCpu: s.limitsCpu,
    minInstances: s.minInstances,
    maxInstances: s.maxInstances,
    port: s.port,
    ingressname: s.ingressname,
    options: s.options,
  };
}

export function toScaling(definition: AppDefinition): AppDefinitionScaling {
  return {
    appDefinitionName: definition.metadata.name,
    minInstances: definition.spec.minInstances ?? 0,
    maxInstances: definition.spec.maxInstances === undefined ? 1000 : definition.spec.maxInstances,
  };
}

/** `reserved`: the instances its active sessions hold (`countReservedInstances`). */
export function toAdminItem(definition: AppDefinition, reserved: number): AdminAppDefinitionItem {
  const pool = definition.status?.pool;
  return { ...toScaling(definition), ...(pool ? { pool: { ...pool, reserved } } : {}) };
}

/** Splits a Kubernetes quantity such as `12345n` or `1024Ki` into amount and format (unit suffix). */
export function splitQuantity(quantity: string): { amount: string; format: string } {
  const match = /^([+-]?[0-9.]+(?:[eE][-+]?[0-9]+)?)(.*)$/.exec(quantity.trim());
  if (!match) return { amount: quantity, format: '' };
  return { amount: match[1]!, format: match[2]! };
}

export interface PodMetrics {
  containers?: { name: string; usage?: { cpu?: string; memory?: string } }[];
}

/** The performance answer for the container named after the app definition, or undefined. */
export function toPerformance(metrics: PodMetrics, container: string): Performance | undefined {
  const usage = metrics.containers?.find((c) => c.name === container)?.usage;
  if (!usage?.cpu || !usage.memory) return undefined;
  const cpu = splitQuantity(usage.cpu);
  const memory = splitQuantity(usage.memory);
  return { cpuAmount: cpu.amount, cpuFormat: cpu.format, memoryAmount: memory.amount, memoryFormat: memory.format };
}
