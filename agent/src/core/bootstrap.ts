// The auto-bootstrap on session start: git identity from GIT_USER/GIT_MAIL, then GIT_URI cloned exactly
// as given into the workspace folder, then the TEMPLATE starter when the workspace is still blank.
// One setup at a time per folder (see lock.ts): a second one waits for the first, then finds its work
// done and leaves it as it is.
import { mkdir } from 'node:fs/promises';
import { cloneIntoWorkspace, type CloneResult } from './clone.js';
import { configureIdentity, type GitOptions } from './git.js';
import type { SessionValues } from './keys.js';
import { withWorkspaceLock, type WorkspaceLockOptions } from './lock.js';
import type { RedactingLog } from './log.js';
import { stripCredentials } from './redact.js';
import { applyTemplate, isBlankWorkspace } from './templates.js';

export interface BootstrapOptions extends GitOptions {
  values: SessionValues;
  /** The workspace folder the IDE has open (created when missing). */
  dir: string;
  log: RedactingLog;
  /** Where user.name/user.email go; `global` (default) serves every repository of the session. */
  gitConfigScope?: 'global' | 'local';
  /** The workspace lock's tuning; `onWait` tells the front that another setup runs first. */
  lock?: Omit<WorkspaceLockOptions, 'log'>;
}

export interface BootstrapResult {
  identity: string[];
  clone?: CloneResult;
  template: string[];
}

export async function bootstrapWorkspace(options: BootstrapOptions): Promise<BootstrapResult> {
  const { values, dir, log } = options;
  log.addSecret(values.PLATFORM_TOKEN);
  log.addUrlCredentials(values.GIT_URI);
  await mkdir(dir, { recursive: true });
  return withWorkspaceLock(dir, () => setUp(options), { ...options.lock, log: log.log });
}

async function setUp(options: BootstrapOptions): Promise<BootstrapResult> {
  const { values, dir, log } = options;
  const result: BootstrapResult = { identity: [], template: [] };

  const scope = options.gitConfigScope ?? 'global';
  result.identity = await configureIdentity(
    { name: values.GIT_USER, email: values.GIT_MAIL },
    { ...options, scope, ...(scope === 'local' ? { cwd: dir } : {}) },
  );
  if (result.identity.length > 0) log.log(`git ${result.identity.join(' and ')} configured`);
  else log.log('GIT_USER and GIT_MAIL not set; git identity left as it is');

  if (values.GIT_URI) {
    log.log(`cloning ${stripCredentials(values.GIT_URI)} into ${dir}…`);
    result.clone = await cloneIntoWorkspace(values.GIT_URI, dir, { ...options, secrets: [values.PLATFORM_TOKEN] });
    const messages = {
      cloned: 'done: repository cloned',
      'already-present': 'the workspace already holds this repository; left as it is',
      'other-repository': `the workspace already holds another repository (${stripCredentials(result.clone.remote)}); left as it is`,
    } as const;
    log.log(messages[result.clone.outcome]);
  } else {
    log.log('GIT_URI not set; nothing to clone');
  }

  if (values.TEMPLATE && (await isBlankWorkspace(dir))) {
    result.template = await applyTemplate(values.TEMPLATE, dir);
    log.log(`${values.TEMPLATE} starter written: ${result.template.join(', ') || 'nothing new'}`);
  }
  return result;
}
