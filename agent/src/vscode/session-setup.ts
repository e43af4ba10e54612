// The IDE front's one service: runs the session bootstrap when the IDE starts and the participation
// clone on demand, and shows progress. It depends on small interfaces, not on the vscode module, so the
// wiring in extension.ts is the only place that knows VS Code.
import { access, readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  AgentError,
  RedactingLog,
  bootstrapWorkspace,
  cloneParticipation,
  credentialsOf,
  describeError,
  resolveSessionValues,
  stripCredentials,
  type GetEnv,
  type SessionValues,
} from '../core/index.js';

export type SetupState = 'waiting' | 'cloning' | 'ready' | 'failed' | 'idle';

export interface SetupUi {
  /** One plain log line (already redacted). */
  appendLine(line: string): void;
  /** Status-bar state. */
  showState(state: SetupState, detail: string): void;
  /** A notification for a failure; resolves with the action picked, if any. */
  showError(message: string, ...actions: string[]): Promise<string | undefined>;
  showInfo(message: string): void;
  /** Asks the user for a value; undefined when dismissed. */
  ask(prompt: string, value?: string): Promise<string | undefined>;
  showLog(): void;
  /** Opens the repository's README (a file in the workspace folder) where the student sees it first. */
  showReadme(file: string): Promise<void>;
}

/** Where the service remembers what it did for the open folder (VS Code's workspaceState fits). */
export interface SetupMemory {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): PromiseLike<void>;
}

export interface SessionSetupOptions {
  ui: SetupUi;
  env: NodeJS.ProcessEnv;
  getEnv: GetEnv;
  /** The folder the IDE has open, if any. */
  workspaceDir: () => string | undefined;
  memory: SetupMemory;
}

/** README names, most wanted first: a markdown one opens as a preview. */
const README = /^readme(\.(md|markdown|txt|rst|adoc))?$/i;
const README_SHOWN = 'ideCloud.readmeShown';

/** The README at the top of `dir`, markdown preferred; undefined when there is none. */
export async function findReadme(dir: string): Promise<string | undefined> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const names = entries.filter((e) => e.isFile() && README.test(e.name)).map((e) => e.name);
  const rank = (name: string) => (/\.(md|markdown)$/i.test(name) ? 0 : 1);
  const [best] = names.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  return best === undefined ? undefined : path.join(dir, best);
}

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

export class SessionSetup {
  private values: SessionValues | undefined;
  private running: Promise<void> | undefined;
  private disposed = false;
  private readonly log: RedactingLog;

  constructor(private readonly options: SessionSetupOptions) {
    this.log = new RedactingLog(
      (line) => {
        if (!this.disposed) options.ui.appendLine(line);
      },
      [options.env.PLATFORM_TOKEN, ...credentialsOf(options.env.GIT_URI)],
    );
  }

  /** Reads the launch values (bridge or environment), configures git and clones GIT_URI. */
  bootstrap(): Promise<void> {
    this.running ??= this.runBootstrap().then(
      () => {
        this.running = undefined;
      },
      (error: unknown) => {
        this.running = undefined;
        this.fail(error, () => this.bootstrap());
      },
    );
    return this.running;
  }

  private async runBootstrap(): Promise<void> {
    const { ui } = this.options;
    const dir = this.options.workspaceDir();
    ui.showState('waiting', 'Waiting for the session values');
    const resolved = await resolveSessionValues({
      env: this.options.env,
      getEnv: this.options.getEnv,
      log: this.log.log,
    });
    this.values = resolved.values;
    this.log.addSecret(resolved.values.PLATFORM_TOKEN);
    this.log.addUrlCredentials(resolved.values.GIT_URI);
    const keys = Object.entries(resolved.origins).map(([key, origin]) => `${key} (${origin})`);
    this.log.log(`launch values: ${keys.join(', ') || 'none'}`);
    if (!dir) {
      this.log.log('no workspace folder is open; nothing to clone into');
      ui.showState('idle', 'No workspace folder');
      return;
    }
    ui.showState('cloning', resolved.values.GIT_URI ? 'Cloning the repository' : 'Setting up git');
    // The session image's own agent may be cloning already (a warm instance, values injected before any
    // browser opened the IDE): the bootstrap then waits for it and finds the repository in place.
    const result = await bootstrapWorkspace({
      values: resolved.values,
      dir,
      log: this.log,
      env: this.options.env,
      lock: { onWait: () => ui.showState('waiting', 'Waiting for the session setup under way') },
    });
    this.log.log('done');
    ui.showState('ready', result.clone ? `Repository ready in ${dir}` : 'Session ready');
    if (result.clone?.outcome === 'cloned') ui.showInfo(`Cloned ${stripCredentials(result.clone.remote)}`);
    if (result.clone) await this.showReadmeOnce(dir);
  }

  /**
   * The repository's README instead of a Welcome page, once per folder: a warm session's clone lands
   * after the workbench loaded, so this waits for the setup; later loads restore what the student left
   * open (or closed).
   */
  private async showReadmeOnce(dir: string): Promise<void> {
    const { memory, ui } = this.options;
    if (memory.get<boolean>(README_SHOWN)) return;
    const readme = await findReadme(dir);
    if (!readme) return;
    await memory.update(README_SHOWN, true);
    try {
      await ui.showReadme(readme);
    } catch (error) {
      // The session works without it: a line in the log, no notification.
      this.log.log(`could not open ${path.basename(readme)}: ${this.log.redact(describeError(error))}`);
    }
  }

  /** Asks for a participation and clones its repository with a fresh participation token. */
  async cloneParticipation(): Promise<void> {
    const { ui } = this.options;
    const root = this.options.workspaceDir();
    if (!root) {
      void ui.showError('Open a workspace folder first: the repository is cloned into it.');
      return;
    }
    const values = this.values ?? (await resolveSessionValues({ env: this.options.env, log: this.log.log })).values;
    this.log.addSecret(values.PLATFORM_TOKEN);
    const participationId = await ui.ask('Participation id (from the learning platform)');
    if (!participationId) return;
    const suggested = values.GIT_URI ? stripCredentials(values.GIT_URI) : undefined;
    const repository = await ui.ask('Repository URL of the participation (https://host/path.git)', suggested);
    if (!repository) return;
    const participant = await ui.ask('Participant (your user name on the git server)', values.GIT_USER);
    if (!participant) return;

    // The workspace folder itself when it holds nothing yet, otherwise a folder named after the repository.
    const blank = !(await exists(path.join(root, '.git'))) && (await readdir(root).catch(() => [])).length === 0;
    const name = path.basename(stripCredentials(repository).replace(/\/+$/, '')).replace(/\.git$/, '') || 'repository';
    const dir = blank ? root : path.join(root, name);
    ui.showState('cloning', `Cloning participation ${participationId}`);
    try {
      const result = await cloneParticipation({
        platformUrl: values.PLATFORM_URL,
        platformToken: values.PLATFORM_TOKEN,
        participationId,
        repository,
        participant,
        dir,
        log: this.log,
        env: this.options.env,
      });
      this.log.log(result.outcome === 'cloned' ? 'done' : `${dir} already holds a repository; left as it is`);
      ui.showState('ready', `Repository ready in ${dir}`);
      ui.showInfo(result.outcome === 'cloned' ? `Cloned into ${dir}` : `${dir} already holds a repository`);
    } catch (error) {
      this.fail(error, () => this.cloneParticipation());
    }
  }

  /** Logs and shows the failure; the notification's actions run later, once the user picks one. */
  private fail(error: unknown, retry: () => Promise<void>): void {
    const { ui } = this.options;
    const message = this.log.redact(describeError(error));
    this.log.log(`error: ${message}`);
    if (!(error instanceof AgentError)) this.log.log('this is unexpected; please report it with the lines above');
    ui.showState('failed', message);
    void ui.showError(`Session setup failed: ${message}`, 'Retry', 'Show Log').then((action) => {
      if (action === 'Retry') void retry();
      else if (action === 'Show Log') ui.showLog();
    });
  }

  dispose(): void {
    this.disposed = true;
  }
}
