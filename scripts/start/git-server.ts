// A real git smart-HTTP server, npm start's sample course and the tests' git host: `git http-backend`
// (CGI) behind a small Node HTTP front on 127.0.0.1 that checks basic auth. Bare repositories live in a
// project root (a temporary one unless given); a repository is public (anonymous read) or private (any
// known user); pushes always need a user.
//
//   const server = await startGitServer({ users: { alice: 's3cret' } });
//   const url = await server.createRepository('course/exercise.git', { files: { 'README.md': 'hi' } });
//   ... http://alice:s3cret@127.0.0.1:PORT/course/exercise.git ...
//   await server.close();
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface GitServerOptions {
  users?: Record<string, string>;
  /** Each request waits this long before it is handled: a slow server keeps git's processes alive to look at. */
  delayMs?: number;
  /** The address to listen on and name in the URLs (default loopback). */
  host?: string;
  /** The folder of the bare repositories (created; removed by close). Default: a new temporary one. */
  root?: string;
}

export interface RepositoryOptions {
  /** private (default): reads need a known user; public: anonymous reads allowed. */
  access?: 'private' | 'public';
  /** Files of the first commit on `main`; none → an empty repository. */
  files?: Record<string, string>;
}

export interface GitRequest {
  method: string;
  path: string;
  user?: string;
  status: number;
  /** The request's Content-Encoding (git gzips large fetch negotiations). */
  contentEncoding?: string;
  /** True when the request body came with Transfer-Encoding: chunked. */
  chunked: boolean;
}

export interface GitServer {
  /** `http://127.0.0.1:PORT` (the `host` listened on) */
  url: string;
  /** Folder holding the bare repositories. */
  root: string;
  /** Every request answered, in order. */
  requests: GitRequest[];
  addUser(name: string, password: string): void;
  removeUser(name: string): void;
  /** Creates a bare repository (name like `group/repo.git`); returns its URL without credentials. */
  createRepository(name: string, options?: RepositoryOptions): Promise<string>;
  /** `http://user:password@127.0.0.1:PORT/name` with both parts URL-encoded. */
  urlWithCredentials(name: string, user: string, password: string): string;
  close(): Promise<void>;
}

const GIT_IDENTITY = {
  GIT_AUTHOR_NAME: 'Fixture',
  GIT_AUTHOR_EMAIL: 'fixture@example.invalid',
  GIT_COMMITTER_NAME: 'Fixture',
  GIT_COMMITTER_EMAIL: 'fixture@example.invalid',
};

/** git with no user or system config, so the machine's settings never leak into fixtures. */
function isolatedGitEnv(): NodeJS.ProcessEnv {
  return { ...process.env, ...GIT_IDENTITY, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' };
}

function parseBasicAuth(header: string | undefined): { user: string; password: string } | undefined {
  const match = /^Basic\s+(.+)$/i.exec(header ?? '');
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/** Splits a CGI answer into status, headers and the rest of the body. */
function parseCgiHead(head: string): { status: number; headers: [string, string][] } {
  let status = 200;
  const headers: [string, string][] = [];
  for (const line of head.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim();
    const value = line.slice(colon + 1).trim();
    if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10) || 500;
    else headers.push([name, value]);
  }
  return { status, headers };
}

export async function startGitServer(options: GitServerOptions = {}): Promise<GitServer> {
  const root = options.root ?? (await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-git-')));
  await mkdir(root, { recursive: true });
  const users = new Map(Object.entries(options.users ?? {}));
  const publicRepos = new Set<string>();
  const requests: GitRequest[] = [];

  function repositoryOf(pathname: string): string | undefined {
    const match = /^\/(.+?\.git)(\/|$)/.exec(pathname);
    return match?.[1];
  }

  const server = http.createServer((req, res) => {
    if (options.delayMs) setTimeout(() => handle(req, res), options.delayMs);
    else handle(req, res);
  });
  function handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const credentials = parseBasicAuth(req.headers.authorization);
    const user = credentials && users.get(credentials.user) === credentials.password ? credentials.user : undefined;
    const repo = repositoryOf(url.pathname);
    const isPush = url.searchParams.get('service') === 'git-receive-pack' || url.pathname.endsWith('/git-receive-pack');
    const contentEncoding = req.headers['content-encoding'];
    const record = (status: number) =>
      requests.push({
        method: req.method ?? 'GET',
        path: url.pathname,
        ...(user ? { user } : {}),
        status,
        ...(contentEncoding ? { contentEncoding } : {}),
        chunked: /chunked/i.test(req.headers['transfer-encoding'] ?? ''),
      });

    if (!repo) {
      record(404);
      res.writeHead(404).end('not found\n');
      return;
    }
    const needsUser = isPush || !publicRepos.has(repo);
    if (needsUser && !user) {
      record(401);
      res
        .writeHead(401, { 'WWW-Authenticate': 'Basic realm="git"', 'Content-Type': 'text/plain' })
        .end('unauthorized\n');
      return;
    }

    const env: NodeJS.ProcessEnv = {
      ...isolatedGitEnv(),
      GIT_PROJECT_ROOT: root,
      GIT_HTTP_EXPORT_ALL: '1',
      GATEWAY_INTERFACE: 'CGI/1.1',
      REQUEST_METHOD: req.method ?? 'GET',
      PATH_INFO: decodeURIComponent(url.pathname),
      QUERY_STRING: url.search.replace(/^\?/, ''),
      CONTENT_TYPE: req.headers['content-type'] ?? '',
      REMOTE_ADDR: req.socket.remoteAddress ?? '127.0.0.1',
      ...(user ? { REMOTE_USER: user } : {}),
      // http-backend inflates a gzip body itself when told; Node already removed any chunked framing.
      ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: req.headers['content-encoding'] } : {}),
      ...(req.headers['git-protocol'] ? { HTTP_GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
    };
    const cgi = spawn('git', ['http-backend'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
    let head = Buffer.alloc(0);
    let headDone = false;
    let stderr = '';
    cgi.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const crlf = head.indexOf('\r\n\r\n');
      const lf = head.indexOf('\n\n');
      const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf + 4 : lf >= 0 ? lf + 2 : -1;
      if (end < 0) return;
      headDone = true;
      const parsed = parseCgiHead(head.subarray(0, end).toString('latin1'));
      record(parsed.status);
      res.writeHead(parsed.status, parsed.headers);
      res.write(head.subarray(end));
    });
    cgi.on('close', (code) => {
      if (!headDone) {
        record(500);
        res.writeHead(500, { 'Content-Type': 'text/plain' }).end(`http-backend failed (${code}): ${stderr}\n`);
        return;
      }
      res.end();
    });
    cgi.on('error', () => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
    cgi.stdin.on('error', () => {});
    req.pipe(cgi.stdin);
  }

  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const base = `http://${host}:${(server.address() as AddressInfo).port}`;

  return {
    url: base,
    root,
    requests,
    addUser: (name, password) => void users.set(name, password),
    removeUser: (name) => void users.delete(name),
    async createRepository(name, repoOptions = {}) {
      const bare = path.join(root, name);
      await mkdir(path.dirname(bare), { recursive: true });
      const env = isolatedGitEnv();
      await run('git', ['init', '--quiet', '--bare', '--initial-branch=main', bare], { env });
      await run('git', ['-C', bare, 'config', 'http.receivepack', 'true'], { env });
      if (repoOptions.access === 'public') publicRepos.add(name);
      const files = Object.entries(repoOptions.files ?? {});
      if (files.length > 0) {
        const work = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-git-work-'));
        try {
          await run('git', ['init', '--quiet', '--initial-branch=main', work], { env });
          for (const [file, content] of files) {
            await mkdir(path.dirname(path.join(work, file)), { recursive: true });
            await writeFile(path.join(work, file), content);
          }
          await run('git', ['-C', work, 'add', '--all'], { env });
          await run('git', ['-C', work, 'commit', '--quiet', '-m', 'Initial commit'], { env });
          await run('git', ['-C', work, 'push', '--quiet', bare, 'main'], { env });
        } finally {
          await rm(work, { recursive: true, force: true });
        }
      }
      return `${base}/${name}`;
    },
    urlWithCredentials: (name, user, password) =>
      `http://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${base.slice('http://'.length)}/${name}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(root, { recursive: true, force: true });
    },
  };
}
