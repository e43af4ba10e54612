// The CLI front, for a container entrypoint step: plain log lines, exit 0 when the workspace is ready,
// non-zero with what failed and what to do otherwise. It reads the process environment (the data bridge
// is reachable only from inside the IDE; see the extension front).
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  AgentError,
  RedactingLog,
  bootstrapWorkspace,
  credentialsOf,
  cloneParticipation,
  describeError,
  resolveSessionValues,
  stripCredentials,
} from '../core/index.js';

export const USAGE = `Usage:
  ide-cloud-agent [bootstrap] [--dir DIR]
      Configure git user.name/user.email from GIT_USER/GIT_MAIL and clone GIT_URI (exactly as given)
      into DIR (default: the current directory). A DIR that already holds the repository is left alone.
  ide-cloud-agent participation --participation-id ID --repository URL [--participant NAME] [--dir DIR]
      Get a participation access token from PLATFORM_URL with PLATFORM_TOKEN and clone URL with it.
      NAME defaults to GIT_USER.

Environment: GIT_URI, GIT_USER, GIT_MAIL, PLATFORM_URL, PLATFORM_TOKEN, TEMPLATE (maven, gradle, make, bazel).
Exit codes: 0 done, 1 failed (the message says what to do), 2 wrong usage.`;

export interface CliIo {
  env: NodeJS.ProcessEnv;
  cwd: string;
  out: (line: string) => void;
  err: (line: string) => void;
}

export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      options: {
        dir: { type: 'string' },
        'participation-id': { type: 'string' },
        repository: { type: 'string' },
        participant: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    io.err(`error: ${(error as Error).message}`);
    io.err(USAGE);
    return 2;
  }
  const { values: flags, positionals } = parsed;
  if (flags.help) {
    io.out(USAGE);
    return 0;
  }
  const command = positionals[0] ?? 'bootstrap';
  if (!['bootstrap', 'participation'].includes(command) || positionals.length > 1) {
    io.err(`error: unknown command ${positionals.join(' ')}`);
    io.err(USAGE);
    return 2;
  }

  const dir = path.resolve(io.cwd, flags.dir ?? '.');
  const secrets = [io.env.PLATFORM_TOKEN, ...credentialsOf(io.env.GIT_URI)];
  const log = new RedactingLog(io.out, secrets);
  const errors = new RedactingLog(io.err, secrets);
  try {
    if (command === 'participation') {
      if (!flags['participation-id'] || !flags.repository) {
        io.err('error: participation needs --participation-id and --repository');
        io.err(USAGE);
        return 2;
      }
      const result = await cloneParticipation({
        platformUrl: io.env.PLATFORM_URL,
        platformToken: io.env.PLATFORM_TOKEN,
        participationId: flags['participation-id'],
        repository: flags.repository,
        participant: flags.participant ?? io.env.GIT_USER,
        dir,
        log,
        env: io.env,
      });
      log.log(
        result.outcome === 'cloned'
          ? `done: ${stripCredentials(result.remote)} cloned into ${dir}`
          : `${dir} already holds a repository; left as it is`,
      );
      return 0;
    }
    const { values } = await resolveSessionValues({ env: io.env, log: log.log });
    await bootstrapWorkspace({ values, dir, log, env: io.env });
    log.log('done');
    return 0;
  } catch (error) {
    errors.log(`error: ${describeError(error)}`);
    if (!(error instanceof AgentError)) errors.log('this is unexpected; please report it with the lines above');
    return 1;
  }
}
