/// <reference lib="dom" />
// The landing page's script (bundled by esbuild, carried inline by the page). It reads the launch parameters, removes
// them from the address bar at once, signs in when an identity provider is configured, then either
// launches right away or shows the launch screen. Secret values are never logged or shown.
import { UserManager, WebStorageStateStore, type User } from 'oidc-client-ts';
import {
  messageFor,
  PROGRESS_STEPS,
  queueText,
  stepIndex,
  stepOf,
  type Failure,
  type ProgressStepId,
  type SessionSnapshot,
} from '../messages.js';
import {
  decideStart,
  readLaunchParameters,
  templateFor,
  withoutLaunchParameters,
  type LandingApp,
  type LaunchParameters,
} from '../params.js';

interface PageConfig {
  apps: LandingApp[];
  identityProvider: {
    authority: string;
    clientId: string;
    scope: string;
    resource?: string;
    /** The provider's discovery document, when the server had it: not fetched again here. */
    metadata?: Record<string, unknown>;
  } | null;
}

/** The configuration embedded in the page, else config.json's. */
async function pageConfig(): Promise<PageConfig> {
  const embedded = document.getElementById('page-config')?.textContent;
  if (embedded) return JSON.parse(embedded) as PageConfig;
  return (await (await fetch('config.json', { cache: 'no-store' })).json()) as PageConfig;
}

const STORED_PARAMETERS = 'ide-cloud.landing.parameters';

const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

type Screen = 'loading' | 'launch' | 'progress' | 'error';
function show(screen: Screen): void {
  for (const name of ['loading', 'launch', 'progress', 'error'] as const) $(`screen-${name}`).hidden = name !== screen;
  document.body.dataset.screen = screen;
}

function announce(text: string): void {
  $('status').textContent = text;
}

let retry: (() => void) | undefined;
function showFailure(failure: Failure, again?: () => void): void {
  const message = messageFor(failure);
  $('error-title').textContent = message.title;
  $('error-text').textContent = message.text;
  document.body.dataset.failure = failure.kind === 'status' ? String(failure.code) : failure.kind;
  retry = again;
  $('retry-button').hidden = !(message.retry && again);
  show('error');
  announce(message.title);
}

/**
 * The address and any form-posted parameters as the page was opened. Read and removed from the address
 * bar synchronously, before anything else runs, so tokens stay out of history and screenshots.
 */
const opened = (() => {
  const href = location.href;
  const search = location.search;
  const postedElement = document.getElementById('posted-parameters');
  const posted = postedElement?.textContent
    ? (JSON.parse(postedElement.textContent) as Record<string, string>)
    : undefined;
  postedElement?.remove();
  history.replaceState(history.state, '', location.pathname + withoutLaunchParameters(search) + location.hash);
  return { href, search, posted };
})();

/** The launch parameters: posted by a form, else from the address. */
function takeParameters(identityProvider: boolean): LaunchParameters {
  if (opened.posted) return readLaunchParameters(Object.entries(opened.posted), { identityProvider });
  return readLaunchParameters(new URLSearchParams(opened.search), { identityProvider });
}

function isSignInCallback(): boolean {
  const query = new URLSearchParams(opened.search);
  return query.has('state') && (query.has('code') || query.has('error'));
}

/**
 * Signs in when needed; undefined while the browser is being sent to the identity provider. A tab
 * with its own sign-in (sessionStorage) uses it, and keeps it for the browser's other tabs (an
 * HttpOnly cookie the page's server seals, sign-in-cookie.ts); a new tab uses the kept one before it
 * would go to the provider.
 */
async function signIn(
  config: NonNullable<PageConfig['identityProvider']>,
  params: LaunchParameters,
): Promise<{ identity: Identity; params: LaunchParameters } | undefined> {
  const extra = config.resource ? { resource: config.resource } : undefined;
  const manager = new UserManager({
    authority: config.authority,
    client_id: config.clientId,
    redirect_uri: location.origin + location.pathname,
    response_type: 'code',
    scope: config.scope,
    loadUserInfo: false,
    // The refresh token is handed over to the page's server (ownIdentity): the tab never spends it.
    automaticSilentRenew: false,
    ...(config.metadata ? { metadata: config.metadata } : {}),
    userStore: new WebStorageStateStore({ store: window.sessionStorage }),
    ...(extra ? { extraQueryParams: extra, extraTokenParams: extra } : {}),
  });
  // Keep the parameters for the way back (this tab only), then sign in.
  const toProvider = async () => {
    sessionStorage.setItem(STORED_PARAMETERS, JSON.stringify(params));
    await manager.signinRedirect();
  };
  if (isSignInCallback()) {
    const user = await manager.signinRedirectCallback(opened.href);
    history.replaceState(history.state, '', location.pathname);
    const kept = sessionStorage.getItem(STORED_PARAMETERS);
    sessionStorage.removeItem(STORED_PARAMETERS);
    const restored = kept ? (JSON.parse(kept) as LaunchParameters) : {};
    const identity = ownIdentity(user);
    if (user.refresh_token) {
      user.refresh_token = undefined;
      await manager.storeUser(user);
    }
    return { identity, params: { ...restored, ...params } };
  }
  const user = await manager.getUser();
  if (user && !user.expired) return { identity: ownIdentity(user), params };
  const kept = await keptSignIn();
  if (kept) {
    const signInAgain = async () => {
      await fetch('api/sign-in', { method: 'DELETE' }).catch(() => undefined);
      await toProvider();
    };
    return { identity: { user: kept, signInAgain }, params };
  }
  await toProvider();
  return undefined;
}

/**
 * This tab's own sign-in, also kept for the browser's other tabs (best effort: they sign in themselves
 * otherwise), with the refresh token if the provider issued one: fresh from the provider, the tab
 * hands it over to the page's server, which renews the kept sign-in with it.
 */
function ownIdentity(user: User): Identity {
  const identity: Identity = { authorization: `Bearer ${user.access_token}`, user: emailOf(user) };
  const kept = { user: identity.user, refreshToken: user.refresh_token ?? undefined };
  // keepalive: the answer, which carries the kept sign-in's cookie, waits for the service's word on
  // the token; the browser completes it even when the tab leaves meanwhile.
  if (identity.user)
    identity.handOver = api('api/sign-in', kept, identity, { keepalive: true }).then(
      () => undefined,
      () => undefined,
    );
  return identity;
}

/** When the page's server last said the kept sign-in was fit to use (its token good for a minute more). */
let keptCheckedAt = 0;
const KEPT_FRESH_MS = 30_000;

/**
 * The user of the sign-in another tab kept, if the page's server still holds it valid (it renews the
 * access token here when it ran out).
 */
async function keptSignIn(): Promise<string | undefined> {
  try {
    const response = await fetch('api/sign-in', { cache: 'no-store' });
    if (!response.ok) return undefined;
    const { user } = (await response.json()) as { user?: unknown };
    if (typeof user !== 'string') return undefined;
    keptCheckedAt = Date.now();
    return user;
  } catch {
    return undefined;
  }
}

/** The user id of a signed-in user: the e-mail of the ID token, else of the access token. */
function emailOf(user: User): string | undefined {
  if (typeof user.profile.email === 'string') return user.profile.email;
  try {
    const payload = JSON.parse(atob(user.access_token.split('.')[1]!.replace(/-/g, '+').replace(/_/g, '/'))) as {
      email?: unknown;
    };
    return typeof payload.email === 'string' ? payload.email : undefined;
  } catch {
    return undefined;
  }
}

interface Identity {
  /** This tab's own bearer; without it the page's server sends the kept sign-in's. */
  authorization?: string;
  user?: string;
  /** A kept sign-in the service refused (expired, revoked): drop it and sign in at the provider. */
  signInAgain?: () => Promise<void>;
  /** This tab's sign-in on its way to the page's server (ownIdentity); settles, never rejects. */
  handOver?: Promise<void>;
}

/**
 * A POST of the page's API. `keepalive`: the browser completes it, and stores its cookies, even once
 * the page has gone (for small bodies only: 64 KiB at most, the sign-in's is a few).
 */
async function api(
  path: string,
  body: unknown,
  identity: Identity,
  options: { signal?: AbortSignal; keepalive?: boolean } = {},
): Promise<Response> {
  return fetch(path, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(identity.authorization ? { authorization: identity.authorization } : {}),
    },
    body: JSON.stringify(body),
    signal: options.signal,
    keepalive: options.keepalive ?? false,
  });
}

/** How long the page waits for its sign-in's hand-over before it leaves for the IDE: never a hung server's whole time. */
const HAND_OVER_WAIT_MS = 2_000;

/** Resolves when `promise` has settled, or after `ms`, whichever comes first. */
function settledWithin(promise: Promise<unknown> | undefined, ms: number): Promise<void> {
  if (!promise) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = window.setTimeout(resolve, ms);
    const done = () => {
      window.clearTimeout(timer);
      resolve();
    };
    promise.then(done, done);
  });
}

async function ping(): Promise<boolean> {
  const response = await fetch('api/ping', { cache: 'no-store' });
  return response.ok && (await response.json()) === true;
}

/** Reads a Server-Sent Events stream from a fetch response and calls `onMessage` per event. */
async function readEvents(response: Response, onMessage: (event: string, data: unknown) => void): Promise<void> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value.replace(/\r\n/g, '\n');
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length === 0) continue;
      try {
        onMessage(event, JSON.parse(data.join('\n')));
      } catch {
        // a malformed message is skipped
      }
    }
  }
}

class Progress {
  private reached = -1;
  private readonly started = Date.now();
  private readonly timer: number;
  readonly history: ProgressStepId[] = [];

  constructor() {
    for (const li of Array.from($('steps').children) as HTMLElement[]) li.dataset.state = 'pending';
    $('progress-detail').textContent = '';
    document.body.dataset.steps = '';
    this.tick();
    this.timer = window.setInterval(() => this.tick(), 1000);
  }

  private tick(): void {
    const seconds = Math.floor((Date.now() - this.started) / 1000);
    $('elapsed').textContent = `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
  }

  /** Moves forward to `step` (never back); every earlier step counts as done. */
  reach(step: ProgressStepId): void {
    const index = stepIndex(step);
    if (index <= this.reached) return;
    for (let i = this.reached + 1; i <= index; i++) this.history.push(PROGRESS_STEPS[i]!.id);
    this.reached = index;
    for (const li of Array.from($('steps').children) as HTMLElement[]) {
      const i = stepIndex(li.dataset.step as ProgressStepId);
      li.dataset.state = i < index || step === 'ready' ? 'done' : i === index ? 'current' : 'pending';
    }
    const bar = $<HTMLProgressElement>('progress-bar');
    bar.value = index + 1;
    bar.setAttribute('aria-valuetext', PROGRESS_STEPS[index]!.label);
    $('current-step').textContent = PROGRESS_STEPS[index]!.label;
    document.body.dataset.steps = this.history.join(',');
    announce(PROGRESS_STEPS[index]!.label);
  }

  detail(text: string): void {
    $('progress-detail').textContent = text;
  }

  stop(): void {
    window.clearInterval(this.timer);
  }
}

async function launch(
  config: PageConfig,
  params: LaunchParameters,
  identity: Identity,
  template?: string,
): Promise<void> {
  const again = () => void launch(config, params, identity, template);
  // A launch with the kept sign-in (a retry, the form sent minutes later) has it renewed first if need
  // be, by the short request: the launch's own answer waits for the session.
  if (identity.signInAgain && Date.now() - keptCheckedAt > KEPT_FRESH_MS && !(await keptSignIn())) {
    await identity.signInAgain();
    return;
  }
  await new PageLaunch({ parameters: params, user: identity.user, template }, identity, again).run();
}

/**
 * One launch from the page: the progress screen, the service's progress stream, the cancel button and
 * the launch request, until the IDE opens or a failure is shown (with `again` to retry).
 */
class PageLaunch {
  private readonly progress: Progress;
  private readonly streamControl = new AbortController();
  // Aborted by a cancel: a launch whose session does not exist yet then makes none (the stop finds nothing).
  private readonly launchControl = new AbortController();
  private cancelled = false;
  private finished = false;
  // The launch waits in the lazy-start queue (the progress stream says where).
  private queued = false;
  private readonly offline = () => {
    if (this.finished) return;
    this.finish();
    showFailure({ kind: 'network' }, this.again);
  };

  constructor(
    private readonly body: { parameters: LaunchParameters; user?: string; template?: string },
    private readonly identity: Identity,
    private readonly again: () => void,
  ) {
    show('progress');
    this.progress = new Progress();
    this.progress.reach('requested');
  }

  async run(): Promise<void> {
    window.addEventListener('offline', this.offline);
    $('cancel-button').onclick = () => this.cancel();
    // Progress: the service's event stream for this launch's workspace (best effort: the launch goes on without it).
    void this.followProgress();
    const response = await this.request();
    if (response) await this.answer(response);
  }

  private finish(): void {
    this.finished = true;
    this.progress.stop();
    this.streamControl.abort();
    window.removeEventListener('offline', this.offline);
  }

  private async cancel(): Promise<void> {
    if (this.finished) return;
    this.cancelled = true;
    ($('cancel-button') as HTMLButtonElement).disabled = true;
    this.progress.detail('Stopping…');
    this.launchControl.abort();
    try {
      await api('api/cancel', this.body, this.identity);
    } catch {
      // the session may be left running; it is stopped when idle
    }
    this.finish();
    ($('cancel-button') as HTMLButtonElement).disabled = false;
    showFailure({ kind: 'cancelled' }, this.again);
  }

  private async followProgress(): Promise<void> {
    try {
      const response = await api('api/progress', this.body, this.identity, { signal: this.streamControl.signal });
      if (!response.ok) return;
      await readEvents(response, (event, data) => {
        if (this.finished) return;
        if (event === 'session') this.showSession(data as SessionSnapshot & { error?: { code: number } });
        else if (event === 'event') {
          const e = data as { reason?: string; message?: string };
          // While queued, the place in the queue is what the person waits for.
          if (!this.queued) this.progress.detail([e.reason, e.message].filter(Boolean).join(': '));
        }
      });
    } catch {
      // stream closed or aborted
    }
  }

  private showSession(snapshot: SessionSnapshot): void {
    this.progress.reach(stepOf(snapshot));
    if (snapshot.queue) {
      this.progress.detail(queueText(snapshot.queue));
      document.body.dataset.queue = String(snapshot.queue.position);
    } else if (this.queued) {
      this.progress.detail('');
      delete document.body.dataset.queue;
    }
    this.queued = !!snapshot.queue;
  }

  /** The service's answer to the launch; undefined when the launch ended otherwise (cancel, network). */
  private async request(): Promise<Response | undefined> {
    for (;;) {
      let response: Response;
      try {
        response = await api('api/launch', this.body, this.identity, { signal: this.launchControl.signal });
      } catch {
        if (!this.cancelled && !this.finished) {
          this.finish();
          showFailure({ kind: 'network' }, this.again);
        }
        return undefined;
      }
      if (this.cancelled || this.finished) return undefined;
      // Still queued at the service's launch timeout: the session kept its place; wait on it again.
      if (response.status !== 551 || !this.queued) return response;
    }
  }

  /** Opens the IDE, or shows why the launch failed. */
  private async answer(response: Response): Promise<void> {
    if (response.ok) {
      const { url } = (await response.json()) as { url: string };
      this.progress.reach('ready');
      this.finish();
      this.progress.detail('Opening your IDE…');
      // The kept sign-in's cookie comes with the hand-over's answer: the browser's next tab needs it.
      await settledWithin(this.identity.handOver, HAND_OVER_WAIT_MS);
      location.assign(url);
      return;
    }
    if (response.status === 401 && this.identity.signInAgain) {
      this.finish();
      await this.identity.signInAgain();
      return;
    }
    this.finish();
    const code = await response
      .json()
      .then((b: { code?: unknown }) => (typeof b.code === 'number' ? b.code : response.status))
      .catch(() => response.status);
    showFailure({ kind: 'status', code }, this.again);
  }
}

function showLaunchScreen(
  config: PageConfig,
  params: LaunchParameters,
  identity: Identity,
  preselected?: LandingApp,
): void {
  const apps = $('apps');
  apps.replaceChildren();
  config.apps.forEach((app, i) => {
    const label = document.createElement('label');
    const input = document.createElement('input');
    input.type = 'radio';
    input.name = 'app';
    input.value = app.name;
    input.checked = preselected ? app.name === preselected.name : i === 0;
    const span = document.createElement('span');
    span.textContent = app.label;
    label.append(input, span);
    apps.append(label);
  });
  const chosen = () =>
    config.apps.find(
      (a) => a.name === (document.querySelector<HTMLInputElement>('input[name=app]:checked')?.value ?? ''),
    );
  const buildSystems = () => {
    const app = chosen();
    const select = $<HTMLSelectElement>('build-system');
    select.replaceChildren(
      ...(app?.buildSystems ?? []).map((b) => {
        const option = document.createElement('option');
        option.value = b.id;
        option.textContent = b.label;
        return option;
      }),
    );
    $('build-system-field').hidden = !app || app.buildSystems.length === 0;
  };
  apps.onchange = buildSystems;
  buildSystems();
  const needsUser = !config.identityProvider && !params.user;
  $('user-field').hidden = !needsUser;
  const hint = $('launch-hint');
  hint.hidden = Boolean(params.gitUri);
  hint.textContent = params.gitUri ? '' : 'No repository was given: the IDE starts with an empty workspace.';
  $<HTMLFormElement>('launch-form').onsubmit = (event) => {
    event.preventDefault();
    const app = chosen();
    if (!app) return;
    const user = needsUser ? $<HTMLInputElement>('user').value.trim() : params.user;
    if (needsUser && !user) {
      $<HTMLInputElement>('user').setAttribute('aria-invalid', 'true');
      $<HTMLInputElement>('user').focus();
      return;
    }
    const template = templateFor(app, $<HTMLSelectElement>('build-system').value);
    void launch(config, { ...params, appDef: app.name, ...(user ? { user } : {}) }, identity, template);
  };
  show('launch');
}

async function main(): Promise<void> {
  // The maintenance check rides beside the configuration and the sign-in, not after them.
  const pinged = ping();
  pinged.catch(() => undefined);
  const config = await pageConfig();
  let params = takeParameters(config.identityProvider !== null);

  let identity: Identity = {};
  if (config.identityProvider) {
    let signedIn: Awaited<ReturnType<typeof signIn>>;
    try {
      signedIn = await signIn(config.identityProvider, params);
    } catch {
      showFailure({ kind: 'login' }, () => location.reload());
      return;
    }
    if (!signedIn) return; // on the way to the identity provider
    ({ params, identity } = signedIn);
  }

  await proceed(config, params, identity, pinged);
}

/** Ping (maintenance check; `pinged`: one already under way), then the auto-start decision. */
async function proceed(
  config: PageConfig,
  params: LaunchParameters,
  identity: Identity,
  pinged?: Promise<boolean>,
): Promise<void> {
  const again = () => void proceed(config, params, identity);
  show('loading');
  let healthy: boolean;
  try {
    healthy = await (pinged ?? ping());
  } catch {
    showFailure({ kind: 'network' }, again);
    return;
  }
  if (!healthy) {
    showFailure({ kind: 'maintenance' }, again);
    return;
  }

  const decision = decideStart(params, {
    apps: config.apps,
    identityProvider: config.identityProvider !== null,
    authenticated: true,
  });
  switch (decision.kind) {
    case 'unknown-app':
      showFailure({ kind: 'unknown-app' });
      return;
    case 'auto':
      await launch(config, params, identity, templateFor(decision.app));
      return;
    default:
      showLaunchScreen(config, params, identity, decision.kind === 'manual' ? decision.app : undefined);
  }
}

$('retry-button').addEventListener('click', () => retry?.());
main().catch(() => showFailure({ kind: 'network' }, () => location.reload()));
