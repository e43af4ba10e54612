// The CLI front, for a container entrypoint step: plain log lines, exit 0 when the workspace is ready,
// non-zero with what failed and what to do otherwise. It reads the process environment, or with
// --from-bridge the data bridge's own process on this host (the session image starts it so for a warm
// instance, which clones as soon as its values land, whether or not a browser has opened the IDE).
import path from 'node:path';
import { parseArgs } from 'node:util';
import {
  DATA_BRIDGE_TOKEN_ENV,
  DATA_BRIDGE_URL_ENV,
  type SaveWorkResult,
} from '../../../server/src/model/data-bridge.js';
import {
  AgentError,
  RedactingLog,
  bootstrapWorkspace,
  credentialsOf,
  cloneParticipation,
  describeError,
  resolveSessionValues,
  saveWork,
  stripCredentials,
  waitForBridgeProcess,
} from '../core/index.js';

export const USAGE = `Usage:
  ide-cloud-agent [bootstrap] [--dir DIR] [--from-bridge]
      Configure git user.name/user.email from GIT_USER/GIT_MAIL and clone GIT_URI (exactly as given)
      into DIR (default: the current directory). A DIR that already holds the repository is left alone;
      one setup at a time per DIR (a lock file beside it). --from-bridge: first wait, however long, for
      the values at the data bridge process DATA_BRIDGE_URL (on this host) with DATA_BRIDGE_TOKEN.
  ide-cloud-agent participation --participation-id ID --repository URL [--participant NAME] [--dir DIR]
      Get a participation access token from PLATFORM_URL with PLATFORM_TOKEN and clone URL with it.
      NAME defaults to GIT_USER.
  ide-cloud-agent save [--dir DIR] [--json]
      Commit the uncommitted changes of the repository in DIR (or in a folder inside it) and push them,
      with any unpushed commits, to a new branch ide-cloud/saved-<time> of its origin, authenticated
      with a participation token from PLATFORM_URL (participation clones) or GIT_URI's credential.
      The student's branch and files stay as they are. --json: the result as one JSON line on stdout
      ({"outcome": "saved" | "nothing-to-save" | "failed", ...}), the progress on stderr.

Environment: GIT_URI, GIT_USER, GIT_MAIL, PLATFORM_URL, PLATFORM_TOKEN, TEMPLATE (maven, gradle, make, bazel);
DATA_BRIDGE_URL, DATA_BRIDGE_TOKEN (--from-bridge).
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
        json: { type: 'boolean' },
        'from-bridge': { type: 'boolean' },
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
  if (!['bootstrap', 'participation', 'save'].includes(command) || positionals.length > 1) {
    io.err(`error: unknown command ${positionals.join(' ')}`);
    io.err(USAGE);
    return 2;
  }

  if (flags['from-bridge'] && command !== 'bootstrap') {
    io.err('error: --from-bridge goes with bootstrap only');
    io.err(USAGE);
    return 2;
  }

  const dir = path.resolve(io.cwd, flags.dir ?? '.');
  const secrets = [io.env.PLATFORM_TOKEN, io.env[DATA_BRIDGE_TOKEN_ENV], ...credentialsOf(io.env.GIT_URI)];
  const log = new RedactingLog(command === 'save' && flags.json ? io.err : io.out, secrets);
  const errors = new RedactingLog(io.err, secrets);
  if (command === 'save') return save(dir, io, log, errors, flags.json === true);
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
    if (flags['from-bridge']) {
      // The bridge's token serves this request only: git and the platform never see it.
      const env = { ...io.env };
      delete env[DATA_BRIDGE_TOKEN_ENV];
      const { values, origins } = await waitForBridgeProcess({
        url: io.env[DATA_BRIDGE_URL_ENV],
        token: io.env[DATA_BRIDGE_TOKEN_ENV],
        env,
        log: log.log,
      });
      const keys = Object.entries(origins).map(([key, origin]) => `${key} (${origin})`);
      log.log(`launch values: ${keys.join(', ') || 'none'}`);
      await bootstrapWorkspace({ values, dir, log, env });
      log.log('done');
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

/** The save command: exit 0 saved or nothing to save, 1 failed; with --json the result on stdout. */
async function save(dir: string, io: CliIo, log: RedactingLog, errors: RedactingLog, json: boolean): Promise<number> {
  try {
    const { values } = await resolveSessionValues({ env: { ...io.env, SESSION_ENV_STRATEGY: 'env' }, log: log.log });
    const result = await saveWork({ dir, values, log, env: io.env });
    if (json) {
      // The bridge passes this line on to the operator as its answer to POST /save.
      const answer: SaveWorkResult =
        result.outcome === 'saved'
          ? { outcome: 'saved', branch: result.branch, repository: result.repository }
          : { outcome: 'nothing-to-save' };
      io.out(JSON.stringify(answer));
    }
    return 0;
  } catch (error) {
    errors.log(`error: ${describeError(error)}`);
    if (json) {
      const code = error instanceof AgentError ? error.code : 'Unexpected';
      const message = error instanceof AgentError ? error.message : 'the save failed unexpectedly';
      const answer: SaveWorkResult = { outcome: 'failed', code, message };
      io.out(errors.redact(JSON.stringify(answer)));
    }
    return 1;
  }
}
