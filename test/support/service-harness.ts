// Starts the REST service the way main.ts does (startService with a typed config) on a loopback port,
// against the real kube-apiserver, with its JSON logs captured for the secrets assertions.
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import * as k8s from '@kubernetes/client-node';
import { ideCloudResources, type IdeCloudResources } from '../../server/src/kube/resources.js';
import type { AppDefinitionSpecInput } from '../../server/src/model/app-definition.js';
import { LABELS } from '../../server/src/model/api-group.js';
import { userLabelValue } from '../../server/src/model/names.js';
import type { Session, SessionStatus } from '../../server/src/model/session.js';
import { parseServiceConfig, startService, type ServiceConfig } from '../../server/src/service/index.js';
import { eventually } from './kube.js';

export const SERVICE_AUTH_TOKEN = 'service-auth-token-for-tests-5f1c';
export const ADMIN_API_TOKEN = 'admin-api-token-for-tests-9b27';

export interface TestService {
  url: string;
  logs: string[];
  close(): Promise<void>;
}

export async function startTestService(
  kc: k8s.KubeConfig,
  namespace: string,
  overrides: Partial<Parameters<typeof parseServiceConfig>[0]> = {},
): Promise<TestService> {
  const logs: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      logs.push(chunk.toString('utf8'));
      done();
    },
  });
  const config: ServiceConfig = parseServiceConfig({
    serviceAuthToken: SERVICE_AUTH_TOKEN,
    adminApiToken: ADMIN_API_TOKEN,
    namespace,
    port: 0,
    host: '127.0.0.1',
    logLevel: 'debug',
    ...overrides,
  });
  const service = await startService(config, { kubeConfig: kc, logDestination: destination });
  return { url: service.url, logs, close: () => service.close() };
}

export interface Answer {
  status: number;
  text: string;
  json: unknown;
  headers: Headers;
}

/** One HTTP call; a JSON body is sent as application/json; with `timeoutMs`, it rejects past it. */
export async function call(
  base: string,
  method: string,
  path: string,
  options: { body?: unknown; headers?: Record<string, string>; rawBody?: string; timeoutMs?: number } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined = options.rawBody;
  if (options.body !== undefined) {
    headers['content-type'] ??= 'application/json';
    body = JSON.stringify(options.body);
  }
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const signal = options.timeoutMs === undefined ? undefined : AbortSignal.timeout(options.timeoutMs);
  const response = await fetch(`${base}${path}`, { method, headers, body, signal });
  const text = await response.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.status, text, json, headers: response.headers };
}

/** What the AppDefinition schema fills in for a spec that leaves them out. */
export const APP_DEFINITION_DEFAULTS = {
  requestsMemory: '500M',
  requestsCpu: '200m',
  limitsMemory: '2400M',
  limitsCpu: '2',
  minInstances: 0,
  maxInstances: 1000,
};

export const BASE_APP: AppDefinitionSpecInput = {
  name: 'python-latest',
  image: 'ide-cloud/session-python:latest',
  port: 3000,
  ingressname: 'ide-cloud-sessions',
  options: { dataBridgeEnabled: 'true' },
};

/** Applies app definitions into the namespace. */
export async function applyAppDefinitions(
  resources: IdeCloudResources,
  specs: Partial<AppDefinitionSpecInput>[],
): Promise<void> {
  for (const extra of specs) {
    const spec = { ...BASE_APP, ...extra } as AppDefinitionSpecInput;
    await resources.appDefinitions.create({ metadata: { name: spec.name }, spec });
  }
}

export function resourcesOf(kc: k8s.KubeConfig, namespace: string): IdeCloudResources {
  return ideCloudResources(kc, namespace);
}

/**
 * Plays the operator for one session: waits until a session matching `match` exists, then writes
 * the status the operator would (default: Running with a URL, like a Ready lazy session).
 */
export async function operatorFillsStatus(
  resources: IdeCloudResources,
  match: (name: string, spec: { user: string; workspace?: string }) => boolean,
  status: (name: string) => SessionStatus = (name) => ({
    phase: 'Running',
    url: `https://ide.example.test/${name}/`,
    startStrategy: 'lazy',
  }),
  timeoutMs = 30_000,
): Promise<string> {
  const session = await eventually(async () => {
    const found = (await resources.sessions.list()).find(
      (s) => !s.metadata.deletionTimestamp && match(s.metadata.name, s.spec),
    );
    if (!found) throw new Error('no matching session yet');
    return found;
  }, timeoutMs);
  await resources.sessions.patchStatus(session.metadata.name, status(session.metadata.name));
  return session.metadata.name;
}

/**
 * Waits until the service lists `sessionName` among `user`'s sessions (anonymous mode): the service
 * reads from its caches, which see a write the test made directly a moment later (a watch event).
 */
export async function serviceSeesSession(service: TestService, user: string, sessionName: string): Promise<void> {
  await eventually(
    async () => {
      const listed = await call(
        service.url,
        'GET',
        `/service/session/${SERVICE_AUTH_TOKEN}/${encodeURIComponent(user)}`,
      );
      if (!(listed.json as { name: string }[]).some((s) => s.name === sessionName)) {
        throw new Error(`the service does not list ${sessionName} yet`);
      }
    },
    10_000,
    20,
  );
}

/** One message of the progress stream (Server-Sent Events). */
export interface StreamMessage {
  event: string;
  data: Record<string, unknown>;
}

/** Moves the complete events (blocks ending in a blank line) of `buffer` into `messages`; returns the rest. */
export function takeServerSentEvents(buffer: string, messages: StreamMessage[]): string {
  let end: number;
  while ((end = buffer.indexOf('\n\n')) >= 0) {
    const block = buffer.slice(0, end);
    buffer = buffer.slice(end + 2);
    const event = /^event: (.*)$/m.exec(block)?.[1];
    const data = /^data: (.*)$/m.exec(block)?.[1];
    if (event && data) messages.push({ event, data: JSON.parse(data) as Record<string, unknown> });
  }
  return buffer;
}

/**
 * Reads a Server-Sent Events response until `until` holds for the messages so far; rejects when the
 * stream ends first or past `timeoutMs`.
 */
export async function readProgressStream(
  url: string,
  until: (messages: StreamMessage[]) => boolean,
  timeoutMs = 60_000,
): Promise<StreamMessage[]> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const messages: StreamMessage[] = [];
  try {
    const response = await fetch(url, { signal: controller.signal });
    if (!response.ok || !response.body) throw new Error(`progress stream answered ${response.status}`);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    while (!until(messages)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`the progress stream ended early: ${JSON.stringify(messages)}`);
      buffer = takeServerSentEvents(buffer + value, messages);
    }
    return messages;
  } catch (error) {
    if (controller.signal.aborted)
      throw new Error(`the progress stream did not show it in time: ${JSON.stringify(messages)}`);
    throw error;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
}

/** The sessions of `user` that are not being deleted. */
export async function activeSessionsOf(resources: IdeCloudResources, user: string): Promise<Session[]> {
  return (await resources.sessions.list(`${LABELS.user}=${userLabelValue(user)}`)).filter(
    (s) => !s.metadata.deletionTimestamp,
  );
}

/** Asserts that `expected` is the one session its user has left and that `answer` gave its URL; resolves with it. */
export async function assertAnsweredAlone(
  resources: IdeCloudResources,
  answer: Answer,
  expected: Session,
  message: string,
): Promise<Session> {
  const sessions = await activeSessionsOf(resources, expected.spec.user);
  assert.deepEqual(
    sessions.map((s) => s.metadata.uid),
    [expected.metadata.uid],
    message,
  );
  assert.equal(answer.text, sessions[0]!.status?.url);
  return sessions[0]!;
}

/** An ephemeral launch of python-latest for `user` with one value of a course (`COURSE`), as a course link sends it. */
export function launchEphemeral(base: string, user: string, timeout: number, course: string): Promise<Answer> {
  return call(base, 'POST', '/service', {
    body: {
      appId: SERVICE_AUTH_TOKEN,
      user,
      appDefinition: 'python-latest',
      ephemeral: true,
      timeout,
      env: { fromMap: { COURSE: course } },
    },
  });
}
