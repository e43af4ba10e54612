// The authentication proxy of a session pod as a real process: oauth2-proxy built from the Go module
// proxy (scripts/cluster/build.sh auth-proxy), started through the image's own entrypoint with the
// image's configuration files, and given exactly the arguments and environment of the container the
// operator wrote into the pod spec. What the kubelet would do is done here: secret references are
// resolved, and the image's and volumes' paths are mapped to the repository and to local directories.
// The proxy's admission (images/auth-proxy/admission), when the container runs it, is built here with
// the machine's Go from the same source the image builds, once per source.
import { execFile, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { promisify } from 'node:util';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as k8s from '@kubernetes/client-node';
import { ensureBinaries } from '../../scripts/cluster/control-plane.js';
import { eventually } from './kube.js';
import { endProcess, spawnTracked } from './processes.js';

const IMAGE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'images', 'auth-proxy');

export interface AuthProxyProcess {
  /** The proxy's own origin, as the ingress controller reaches it. */
  origin: string;
  pid: number;
  output: string[];
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<void>;
}

export interface AuthProxyRun {
  container: k8s.V1Container;
  /** Values of the Secrets the container references, by `<secret>/<key>`. */
  secrets: Record<string, string>;
  /** Where each mount path of the container lives on this machine. */
  mounts: Record<string, string>;
  /** The address the proxy binds (the pod binds 0.0.0.0, which a test must not). */
  address: string;
  /** The address its admission binds, when the container runs one. */
  admissionAddress?: string;
}

/** The admission's binary, built from images/auth-proxy/admission; its directory, for PATH. */
async function admissionBinary(): Promise<string> {
  const source = path.join(IMAGE_DIR, 'admission');
  const hash = createHash('sha256')
    .update(await readFile(path.join(source, 'main.go')))
    .update(await readFile(path.join(source, 'go.mod')))
    .digest('hex')
    .slice(0, 16);
  const dir = path.join(os.tmpdir(), `ide-cloud-admission-${hash}`);
  if (!existsSync(path.join(dir, 'ide-cloud-admission'))) {
    await promisify(execFile)('go', ['build', '-o', path.join(dir, 'ide-cloud-admission'), '.'], {
      cwd: source,
      env: { ...process.env, CGO_ENABLED: '0', GOTOOLCHAIN: 'local' },
    });
  }
  return dir;
}

export async function startAuthProxy(run: AuthProxyRun): Promise<AuthProxyProcess> {
  const bin = await ensureBinaries('auth-proxy');
  const local = (value: string): string => {
    let mapped = value.replaceAll('/etc/ide-cloud/auth-proxy', IMAGE_DIR);
    // The longest mount path first: one may be a prefix of another (auth-proxy, auth-proxy-admission).
    const mounts = Object.entries(run.mounts).sort(([a], [b]) => b.length - a.length);
    for (const [mountPath, dir] of mounts) mapped = mapped.replaceAll(mountPath, dir);
    return mapped;
  };
  const env: Record<string, string> = { PATH: `${bin}:/usr/bin:/bin` };
  for (const entry of run.container.env ?? []) {
    const ref = entry.valueFrom?.secretKeyRef;
    if (ref) {
      const value = run.secrets[`${ref.name}/${ref.key}`];
      if (value === undefined) throw new Error(`the test gives no value for secret ${ref.name}/${ref.key}`);
      env[entry.name] = value;
    } else env[entry.name] = local(entry.value ?? '');
  }
  env.AUTH_PROXY_ADDRESS = run.address;
  // No kubelet asks here, and a fixed port would collide between the proxies of one host.
  delete env.AUTH_PROXY_READY_ADDRESS;
  if (env.AUTH_PROXY_ADMISSION_TOKEN_FILE) {
    if (!run.admissionAddress) throw new Error('the container runs the admission: give it an address');
    env.AUTH_PROXY_ADMISSION_ADDRESS = run.admissionAddress;
    env.PATH = `${await admissionBinary()}:${env.PATH}`;
  }
  const output: string[] = [];
  // A process group of its own (spawnTracked): the admission, started in the background, goes with the proxy.
  const child: ChildProcess = spawnTracked(
    `auth proxy (${run.address})`,
    path.join(IMAGE_DIR, 'entrypoint.sh'),
    (run.container.args ?? []).map(local),
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const origin = `http://${run.address}`;
  try {
    await eventually(
      async () => {
        if (child.exitCode !== null) throw new Error(`the proxy exited (${child.exitCode}): ${output.join('')}`);
        const response = await fetch(`${origin}/ping`);
        if (response.status !== 200) throw new Error(`ping answered ${response.status}`);
      },
      30_000,
      100,
    );
  } catch (error) {
    await endProcess(child, 'SIGKILL');
    throw error;
  }
  return {
    origin,
    pid: child.pid!,
    output,
    // SIGKILL to the proxy's process group: oauth2-proxy and the admission beside it.
    kill: () => endProcess(child, 'SIGKILL'),
  };
}

export interface IngressStandIn {
  /** The proxy server a browser context sends its requests to (loopback stays direct). */
  proxyServer: string;
  close(): Promise<void>;
}

/**
 * The ingress controller's routing, on loopback, as the HTTP proxy of a browser context: each request
 * goes, unchanged, to the process serving the backend Service of the longest path prefix among the
 * rules of its host in `ingresses()` (read at each request, like a controller's watch); `backends` maps
 * Service names to those processes' origins. No route: 404.
 */
export async function startIngressStandIn(
  ingresses: () => Promise<k8s.V1Ingress[]>,
  backends: Map<string, string>,
): Promise<IngressStandIn> {
  const server = http.createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
      const paths = (await ingresses()).flatMap((ingress) =>
        (ingress.spec?.rules ?? []).filter((r) => r.host === url.hostname).flatMap((r) => r.http?.paths ?? []),
      );
      const match = paths
        .filter((p) => p.path && url.pathname.startsWith(p.path))
        .sort((a, b) => b.path!.length - a.path!.length)[0];
      const origin = match?.backend.service?.name ? backends.get(match.backend.service.name) : undefined;
      if (!origin) return void res.writeHead(404).end(`no route for ${url.pathname}`);
      const upstream = http.request(
        `${origin}${url.pathname}${url.search}`,
        { method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.writeHead(502).end('backend unreachable'));
      req.pipe(upstream);
    })().catch(() => res.writeHead(500).end('stand-in failed'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    proxyServer: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
