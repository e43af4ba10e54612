// One suite's stack on the shared control plane, set up and cleaned up by mocha hooks that one call
// registers: a namespace of its own, app definitions, the operator, the REST service, the landing page
// and a browser, each only when the suite asks for it. Whatever fails, the after hook stops what was
// started, removes the finalizers the operator left and deletes the namespace.
import * as k8s from '@kubernetes/client-node';
import type { Browser } from 'playwright-core';
import type { IdeCloudResources } from '../../server/src/kube/resources.js';
import {
  parseLandingConfig,
  startLandingPage,
  type LandingConfigInput,
  type RunningLandingPage,
} from '../../server/src/landing/index.js';
import type { AppDefinitionSpecInput } from '../../server/src/model/app-definition.js';
import type { OperatorConfigInput, RunningOperator } from '../../server/src/operator/index.js';
import { launchBrowser } from './browser.js';
import { useCluster, type TestCluster } from './cluster.js';
import { createTestNamespace } from './kube.js';
import { LANDING_APPS, logSink } from './landing.js';
import { cleanUpSuite, nodeWithoutKubelet, testOperator } from './operator.js';
import { resourcesOf, SERVICE_AUTH_TOKEN, startTestService, type TestService } from './service-harness.js';
import { spawnService, type ServiceProcess } from './service-process.js';

type NodeWithoutKubelet = Awaited<ReturnType<typeof nodeWithoutKubelet>>;

type ServiceOverrides = NonNullable<Parameters<typeof startTestService>[2]>;
/** A setting, or a function of the stack started so far (for values known only then, such as a URL). */
type Setting<T> = T | ((stack: Stack) => T);

export interface StackOptions {
  /** A node no kubelet runs (`nodeWithoutKubelet`), made before the app definitions; `stack.node`. */
  nodeWithoutKubelet?: boolean;
  /** Created in this order (`BASE_APP`-based specs, or `appDefinitionSpec(...)`). */
  apps?: Setting<AppDefinitionSpecInput[]>;
  /** Runs after the app definitions, before the operator: what the operator or the service needs first. */
  setUp?: (stack: Stack) => Promise<void>;
  /** The operator in-process (with the FAST settings and these). */
  operator?: Setting<Partial<OperatorConfigInput>>;
  /** Keeps every line the operators log (debug level) in `stack.operatorLogs`, for assertions on them. */
  operatorLogs?: boolean;
  /** The REST service in-process (its logs in `stack.service.logs`). */
  service?: Setting<ServiceOverrides>;
  /** The landing page in front of the service (the service is started for it); its logs in `stack.landingLogs`. */
  landing?: Setting<Partial<LandingConfigInput>>;
  /** A headless Chromium (`launchBrowser`). */
  browser?: boolean;
}

/** What the before hook starts. */
interface StackParts {
  cluster: TestCluster;
  namespace: string;
  resources: IdeCloudResources;
  node: NodeWithoutKubelet;
  operator: RunningOperator;
  service: TestService;
  landing: RunningLandingPage;
  landingLogs: string[];
  operatorLogs: string[];
  browser: Browser;
}

export interface Stack extends Readonly<StackParts> {
  readonly kc: k8s.KubeConfig;
  /** Clients of the suite's control plane, made on first use. */
  readonly core: k8s.CoreV1Api;
  readonly apps: k8s.AppsV1Api;
  readonly net: k8s.NetworkingV1Api;
  /** Starts one more operator (a replica, a second version) with the suite's settings and `overrides`; the clean-up stops it. */
  startOperator(overrides?: Partial<OperatorConfigInput>, kubeConfig?: k8s.KubeConfig): Promise<RunningOperator>;
  /** Starts the service as its own process (main.ts) on the suite's namespace; the clean-up stops it (SIGTERM, so it writes its coverage). */
  spawnService(env?: Record<string, string>): Promise<ServiceProcess>;
  /** Stops the service `spawnService` or this started last (SIGTERM), then starts a fresh one. */
  replaceService(env?: Record<string, string>): Promise<ServiceProcess>;
  /** Stops the operator and starts it again with the suite's settings and `overrides` (a restart, an upgrade). */
  restartOperator(overrides?: Partial<OperatorConfigInput>): Promise<RunningOperator>;
  /**
   * Runs `step` in the after hook (the last registered first): before the stack's own clean-up, or
   * `'last'`, after it (for what the operator still uses while it removes its finalizers, such as a proxy).
   */
  cleanUp(step: () => Promise<unknown> | unknown, when?: 'first' | 'last'): void;
}

const PARTS: (keyof StackParts)[] = [
  'cluster',
  'namespace',
  'resources',
  'node',
  'operator',
  'service',
  'landing',
  'landingLogs',
  'operatorLogs',
  'browser',
];

const resolve = <T>(setting: Setting<T>, stack: Stack): T =>
  typeof setting === 'function' ? (setting as (stack: Stack) => T)(stack) : setting;

/**
 * Registers the suite's before and after hooks; call it in a `describe` body, `namespace` the prefix
 * of the suite's namespace. The parts are read through the returned stack once the before hook ran
 * (reading one the suite did not ask for throws).
 */
export function useStack(namespace: string, options: StackOptions = {}): Stack {
  const started: Partial<StackParts> = {};
  const steps: (() => Promise<unknown> | unknown)[] = [];
  let lastSpawned: ServiceProcess | undefined;
  const lastSteps: (() => Promise<unknown> | unknown)[] = [];
  /** Operators the suite started besides `stack.operator`. */
  const others: RunningOperator[] = [];
  const part = <K extends keyof typeof started>(key: K): NonNullable<(typeof started)[K]> => {
    const value = started[key];
    if (value === undefined) throw new Error(`the stack has no ${key}: not asked for, or not started yet`);
    return value;
  };
  const clients = new Map<unknown, unknown>();
  const client = <T extends k8s.ApiType>(api: k8s.ApiConstructor<T>): T => {
    if (!clients.has(api)) clients.set(api, part('cluster').kc.makeApiClient(api));
    return clients.get(api) as T;
  };
  const stack = {
    cleanUp(step: () => Promise<unknown> | unknown, when: 'first' | 'last' = 'first') {
      (when === 'first' ? steps : lastSteps).push(step);
    },
    async startOperator(overrides?: Partial<OperatorConfigInput>, kubeConfig?: k8s.KubeConfig) {
      const operator = await startOperator(overrides, kubeConfig);
      others.push(operator);
      return operator;
    },
    async spawnService(env?: Record<string, string>) {
      const service = await spawnService(part('cluster').kubeconfig, part('namespace'), env);
      steps.push(() => service.kill('SIGTERM'));
      lastSpawned = service;
      return service;
    },
    async replaceService(env?: Record<string, string>) {
      await lastSpawned?.kill('SIGTERM');
      return stack.spawnService(env);
    },
    async restartOperator(overrides?: Partial<OperatorConfigInput>) {
      await part('operator').stop();
      started.operator = undefined;
      started.operator = await startOperator(overrides);
      return started.operator;
    },
  } as Stack;
  const startOperator = (overrides: Partial<OperatorConfigInput> = {}, kubeConfig = part('cluster').kc) =>
    testOperator(
      kubeConfig,
      part('namespace'),
      { ...resolve(options.operator ?? {}, stack), ...overrides },
      started.operatorLogs,
    );
  const getters: Record<string, () => unknown> = {
    kc: () => part('cluster').kc,
    core: () => client(k8s.CoreV1Api),
    apps: () => client(k8s.AppsV1Api),
    net: () => client(k8s.NetworkingV1Api),
  };
  for (const key of PARTS) getters[key] = () => part(key);
  for (const [key, get] of Object.entries(getters)) Object.defineProperty(stack, key, { get });

  before(async () => {
    const cluster = await useCluster();
    started.cluster = cluster;
    if (options.operatorLogs) started.operatorLogs = [];
    started.namespace = await createTestNamespace(cluster.kc, namespace);
    started.resources = resourcesOf(cluster.kc, started.namespace);
    if (options.nodeWithoutKubelet) started.node = await nodeWithoutKubelet(cluster.kc, started.namespace);
    for (const spec of resolve(options.apps ?? [], stack)) {
      await started.resources.appDefinitions.create({ metadata: { name: spec.name }, spec });
    }
    await options.setUp?.(stack);
    if (options.operator) started.operator = await startOperator();
    if (options.service || options.landing) {
      started.service = await startTestService(cluster.kc, started.namespace, resolve(options.service ?? {}, stack));
    }
    if (options.landing) {
      const sink = logSink();
      started.landingLogs = sink.lines;
      started.landing = await startLandingPage(
        parseLandingConfig({
          serviceUrl: started.service!.url,
          serviceAuthToken: SERVICE_AUTH_TOKEN,
          apps: LANDING_APPS,
          port: 0,
          host: '127.0.0.1',
          logLevel: 'debug',
          ...resolve(options.landing, stack),
        }),
        { logDestination: sink.stream },
      );
    }
    if (options.browser) started.browser = await launchBrowser();
  });

  after(async () => {
    // Every step runs even when one before it failed; the first failure is reported.
    const failures: unknown[] = [];
    const attempt = async (step: () => Promise<unknown> | unknown) => {
      try {
        await step();
      } catch (error) {
        failures.push(error);
      }
    };
    for (const step of steps.splice(0).reverse()) await attempt(step);
    await attempt(() => started.browser?.close());
    await attempt(() => started.landing?.close());
    await attempt(() => started.service?.close());
    await attempt(() => started.node?.remove());
    const { cluster, namespace: created } = started;
    if (cluster && created) await attempt(() => cleanUpSuite(cluster.kc, created, [started.operator, ...others]));
    for (const step of lastSteps.splice(0).reverse()) await attempt(step);
    if (failures.length > 0) throw failures[0];
  });

  return stack;
}
