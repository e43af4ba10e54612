// The REST service as its own OS process (`server/src/service/main.ts` under tsx, configured by
// environment variables as in a pod), for restarts that are real kills.
import type { ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { ADMIN_API_TOKEN, SERVICE_AUTH_TOKEN } from './service-harness.js';
import { eventually } from './kube.js';
import { endProcess, spawnTracked } from './processes.js';

export interface ServiceProcess {
  readonly child: ChildProcess;
  /** Where it listens, once it has said so in its log. */
  readonly url: string;
  /** Every line it wrote (its JSON logs and anything else). */
  readonly output: string[];
  /** Its JSON log lines whose message is `msg`, parsed. */
  logged(msg: string): Record<string, unknown>[];
  /** SIGKILL: a crash (nothing of a graceful stop runs); SIGTERM: a graceful stop. Resolves once it exited. */
  kill(signal: 'SIGTERM' | 'SIGKILL'): Promise<void>;
}

const MAIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../server/src/service/main.ts');

/**
 * Starts main.ts on a free loopback port and resolves once it listens (its "service listening" log
 * line, which comes after the caches' first list). `env` adds or overrides variables (config.ts).
 */
export async function spawnService(
  kubeconfig: string,
  namespace: string,
  env: Record<string, string> = {},
): Promise<ServiceProcess> {
  const child = spawnTracked(`service (namespace ${namespace})`, process.execPath, ['--import', 'tsx', MAIN], {
    cwd: path.dirname(path.dirname(path.dirname(MAIN))),
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      KUBECONFIG: kubeconfig,
      SERVICE_AUTH_TOKEN,
      ADMIN_API_TOKEN,
      IDE_CLOUD_NAMESPACE: namespace,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'debug',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    coverage: true,
  });
  const output: string[] = [];
  const logs: Record<string, unknown>[] = [];
  let port: number | undefined;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    output.push(line);
    try {
      const parsed = JSON.parse(line) as Record<string, unknown> | null;
      if (parsed === null || typeof parsed !== 'object') return;
      logs.push(parsed);
      if (parsed.msg === 'service listening') port = parsed.port as number;
    } catch {
      // not a log line
    }
  });
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString('utf8')));
  const kill = (signal: 'SIGTERM' | 'SIGKILL') => endProcess(child, signal);
  try {
    const listening = await eventually(
      () => {
        if (child.exitCode !== null) throw new Error(`the service exited: ${output.join('\n')}`);
        if (port === undefined) throw new Error('the service does not listen yet');
        return port;
      },
      90_000,
      100,
    );
    const logged = (msg: string) => logs.filter((line) => line.msg === msg);
    return { child, url: `http://127.0.0.1:${listening}`, output, logged, kill };
  } catch (error) {
    await kill('SIGKILL');
    throw error;
  }
}
