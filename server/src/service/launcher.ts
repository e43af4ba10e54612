import { randomBytes, randomUUID } from 'node:crypto';
import { OpenCounts } from '../http/open-counts.js';
import { CallSlots } from '../kube/call-slots.js';
import { isQueued, mayWaitAtGateIn, placeIn, queueOf } from '../model/admission.js';
import { envSourcesRefusal } from '../model/session-env.js';
import { ANNOTATIONS, LABELS, SESSION_FINALIZER } from '../model/api-group.js';
import { hasWorkspaceMountingSidecars, type AppDefinition } from '../model/app-definition.js';
import { ErrorCode } from '../model/error-codes.js';
import { countSessions, LAUNCH_WAITERS, sessionLimitRefusal } from '../model/limits.js';
import { dnsLabel, isDnsLabel, sessionNameFor, userLabelValue } from '../model/names.js';
import type { EnvironmentVars } from '../model/requests.js';
import {
  isActiveSession,
  isSessionFailed,
  isSessionReady,
  missingDecisionAnnotations,
  urlHandedOut,
  type Session,
} from '../model/session.js';
import type { Workspace } from '../model/workspace.js';
import type { CachedResource } from './cache.js';
import type { AppDefinitionCatalog } from './catalog.js';
import { ApiError, Conflict, ServiceStopping, describeError } from './errors.js';
import { launchDigest } from './launch-digest.js';
import type { Logger } from './logger.js';
import type { LaunchOutcome, ServiceMetrics } from './metrics.js';
import type { ServiceResources } from './resources.js';
import { waitForSessionGone, waitForSessionUrl } from './session-watch.js';
import type { WorkspaceService } from './workspaces.js';

export interface LaunchInput {
  user: string;
  appDefinition: string;
  workspaceName?: string;
  label?: string;
  ephemeral: boolean;
  /** POST /service creates a missing workspace; POST /service/session needs an existing one. */
  createMissingWorkspace: boolean;
  timeoutMinutes: number;
  env?: EnvironmentVars;
  /** Aborts when the caller is gone (the landing page's cancel aborts its launch): see `abandonIfCallerGone`. */
  callerGone?: AbortSignal;
}

interface Plan {
  appDefinition: AppDefinition;
  workspace?: { name: string; existing?: Workspace };
}

/** The workspace a launch's session goes into (none: ephemeral); `created` when this launch made it. */
interface LaunchWorkspace {
  name?: string;
  created?: string;
}

/** A launch's answer: the session's URL, and whether the session was there before this launch. */
interface LaunchResult {
  url: string;
  name: string;
  reused: boolean;
  session?: Session;
}

/**
 * Launches of one replica whose sessions may wait for the operator's first pass at once; the others
 * wait before creating anything, in order of arrival. In a burst (a class starting) the operator so
 * works on the launches that came first and they finish in turn, instead of every launch finishing
 * late: sessions created far ahead of the operator cost the API server, the operator and this
 * process CPU that the launches in flight need. Twice the operator's workers (16), so it always has
 * the next launch at hand; a lazy launch gives its turn back once the operator has taken it up, not
 * when its pod starts.
 */
export const LAUNCHES_BEFORE_OPERATOR = 32;

/** A launch given its turn with less time left answers 551 at once: it would create only to remove. */
const TURN_TIME_LEFT_MIN_MS = 1000;

function turnTooLate(): ApiError {
  return new ApiError(ErrorCode.launchTimeout, 'the launch did not start in time: too many launches were ahead');
}

/**
 * Launch: turns a request into a Workspace and a Session and waits, on the session cache's events,
 * for the URL the operator reports. Creates nothing before every check (app definition, workspace
 * ownership, sidecars, maxInstances, sessionsPerUser) has passed; on timeout or refusal removes what
 * this very call created, except a workspace's session still queued for a lazy start at the
 * timeout, which keeps its place (`stillQueued`). A workspace that already has a session answers that
 * session's URL (idempotent). An ephemeral launch held at a limit by a session of its user and app
 * definition that a launch whose call is gone left starting, or running but never answered, adopts
 * it, or replaces it when it was launched with other values (`halfStartedEphemeral`), so such a
 * session never blocks the user.
 * Reads come from the service's caches (the limits check lists no Sessions from the API server); a
 * launch answers once the cache shows its session running, so the caller's next listing shows it.
 * A launch that creates a session first takes its turn among those waiting for the operator
 * (`LAUNCHES_BEFORE_OPERATOR`).
 */
export class Launcher {
  constructor(
    private readonly deps: {
      resources: ServiceResources;
      /** The session cache: limits, the wait for the URL, the workspace's session. */
      sessions: CachedResource<Session>;
      catalog: AppDefinitionCatalog;
      workspaces: WorkspaceService;
      metrics: ServiceMetrics;
      logger: Logger;
      sessionsPerUser: number;
    },
  ) {}

  /** The launches waiting now, per workspace and per user (`LAUNCH_WAITERS`). */
  private readonly waiting = new OpenCounts();

  /** The turns of the launches whose sessions wait for the operator (`LAUNCHES_BEFORE_OPERATOR`). */
  private readonly beforeOperator = new CallSlots(LAUNCHES_BEFORE_OPERATOR);

  async launch(input: LaunchInput): Promise<string> {
    const admitted = this.waiting.admit([
      ...(input.workspaceName === undefined
        ? []
        : [
            {
              key: `workspace:${input.user}/${input.workspaceName}`,
              max: LAUNCH_WAITERS.perWorkspace,
              refusal: `too many launches already wait for this workspace (at most ${LAUNCH_WAITERS.perWorkspace}); retry later`,
            },
          ]),
      {
        key: `user:${input.user}`,
        max: LAUNCH_WAITERS.perUser,
        refusal: `too many launches of this user already wait (at most ${LAUNCH_WAITERS.perUser}); retry later`,
      },
    ]);
    if ('refused' in admitted) {
      throw new ApiError(ErrorCode.tooManyWaiters, admitted.refused, undefined, { 'Retry-After': '10' });
    }
    try {
      return await this.launchAdmitted(input);
    } finally {
      admitted.release();
    }
  }

  private async launchAdmitted(input: LaunchInput): Promise<string> {
    const started = Date.now();
    const deadline = started + input.timeoutMinutes * 60_000;
    const labels = { app_definition: 'unknown', outcome: 'error' as LaunchOutcome, start_strategy: 'none' };
    try {
      const plan = await this.plan(input);
      labels.app_definition = plan.appDefinition.metadata.name;
      const result = await this.run(input, plan, deadline);
      labels.outcome = result.reused ? 'reused' : 'success';
      labels.start_strategy = result.session?.status?.startStrategy ?? 'unknown';
      this.deps.logger.info(
        { appDefinition: labels.app_definition, session: result.name, reused: result.reused },
        'session ready',
      );
      return result.url;
    } catch (error) {
      labels.outcome = outcomeOf(error);
      throw error;
    } finally {
      this.deps.metrics.launchDuration.observe(labels, (Date.now() - started) / 1000);
    }
  }

  /** Every check that needs no write. */
  private async plan(input: LaunchInput): Promise<Plan> {
    const appDefinition = await this.deps.catalog.get(input.appDefinition);
    await this.checkEnvSources(input.env);
    if (input.ephemeral) {
      if (input.workspaceName !== undefined) {
        throw ApiError.badRequest('an ephemeral launch takes no workspaceName', [
          { path: 'workspaceName', message: 'must be omitted when ephemeral is true' },
        ]);
      }
      if (hasWorkspaceMountingSidecars(appDefinition.spec)) {
        throw ApiError.badRequest('the app definition has workspace-mounting sidecars: use a workspace-backed launch');
      }
      return { appDefinition };
    }
    // POST /service/session without a workspace comes as ephemeral (its route says so): only
    // POST /service gets here without a name, and it creates a workspace of a generated name.
    if (input.workspaceName === undefined) return { appDefinition, workspace: { name: '' } };
    if (!isDnsLabel(input.workspaceName)) {
      throw new ApiError(ErrorCode.unknownWorkspace, 'invalid workspace name (must be a DNS-1123 label)');
    }
    this.deps.workspaces.checkNameFor(input.user, input.workspaceName);
    const existing = await this.deps.workspaces.findOwned(input.user, input.workspaceName);
    if (!existing && !input.createMissingWorkspace) throw new ApiError(ErrorCode.unknownWorkspace, 'unknown workspace');
    if (existing?.spec.appDefinition && existing.spec.appDefinition !== appDefinition.metadata.name) {
      throw new ApiError(ErrorCode.workspaceAppDefinitionMismatch, 'the workspace exists with another app definition');
    }
    return { appDefinition, workspace: { name: input.workspaceName, existing } };
  }

  /** Only Secrets and ConfigMaps marked for session use may be named (model/session-env.ts): 400 otherwise. */
  private async checkEnvSources(env: LaunchInput['env']): Promise<void> {
    const refusal = await envSourcesRefusal(
      { configMaps: env?.fromConfigMaps, secrets: env?.fromSecrets },
      (kind, name) => this.deps.resources.envSourceMetadata(kind, name),
    );
    if (refusal) throw new ApiError(refusal.code, refusal.reason);
  }

  private async run(input: LaunchInput, plan: Plan, deadline: number): Promise<LaunchResult> {
    // 1. A workspace that already has a session: answer that session (idempotent launch). It may be
    // half-started by a launch whose call is gone (a restarted service): this launch adopts it, and
    // if it still fails or does not start in time, removes it like its own, so it never holds the
    // user's session slot (553) after the answer; the next launch starts afresh.
    if (plan.workspace?.existing) {
      const sessionName = sessionNameFor(plan.workspace.name);
      const running = await this.findSessionOf(sessionName, plan.workspace.name, input.user, deadline);
      if (running) return { ...(await this.adopt(running, deadline)), reused: true };
    }

    // 2. Limits, before anything is created, on the cache (the operator checks again: this races anyway).
    const adopted = await this.passLimits(input, plan, deadline);
    if (adopted) return adopted;

    // 3. A turn among the launches that wait for the operator, held until it has taken the session up.
    const turn = await this.turnBeforeOperator(input, deadline);
    try {
      if (turn.waited) this.checkAfterTurn(input, plan, deadline);
      // 4. The workspace.
      await this.abandonIfCallerGone(input.callerGone, {});
      const workspace = await this.workspaceOf(input, plan);

      // 5. The session.
      await this.abandonIfCallerGone(input.callerGone, { workspace: workspace.created });
      const created = await this.createSession(
        input,
        plan.appDefinition.metadata.name,
        workspace,
        deadline,
        turn.release,
      );
      if ('answer' in created) return created.answer;
      const { session } = created;
      // Read-your-writes: the next launch's limits check counts this session even before its watch event.
      this.deps.sessions.observe(session);
      await this.abandonIfCallerGone(input.callerGone, { session, workspace: workspace.created });

      // 6. Wait for the URL; on failure remove what this call created.
      return await this.awaitCreated(session, workspace, deadline, turn.release);
    } finally {
      turn.release();
    }
  }

  /**
   * A turn among the launches whose sessions wait for the operator (`LAUNCHES_BEFORE_OPERATOR`),
   * waited for in order of arrival (`waited`); its release may be called more than once. A launch
   * whose caller goes while it waits answers 474, one whose deadline passes 551: nothing was created.
   */
  private async turnBeforeOperator(input: LaunchInput, deadline: number) {
    const slots = this.beforeOperator;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      slots.release();
    };
    if (slots.tryAcquire()) return { release, waited: false };
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), Math.max(0, deadline - Date.now()));
    try {
      await slots.acquire(input.callerGone ? AbortSignal.any([input.callerGone, timeout.signal]) : timeout.signal);
    } catch {
      await this.abandonIfCallerGone(input.callerGone, {});
      throw turnTooLate();
    } finally {
      clearTimeout(timer);
    }
    return { release, waited: true };
  }

  /**
   * After a wait for a turn, before anything is created: the limits again (the sessions created
   * meanwhile count now), and the time left (a launch that could not start in it would create only
   * to remove).
   */
  private checkAfterTurn(input: LaunchInput, plan: Plan, deadline: number): void {
    if (deadline - Date.now() < TURN_TIME_LEFT_MIN_MS) throw turnTooLate();
    const refusal = this.limitRefusal(input.user, plan.appDefinition);
    if (refusal) throw new ApiError(refusal.code, refusal.reason);
  }

  /**
   * The launch's workspace: the existing one, or one this call creates (`created` names it), or, when
   * another launch created it concurrently, that one if it is this user's. None for an ephemeral launch.
   */
  private async workspaceOf(input: LaunchInput, plan: Plan): Promise<LaunchWorkspace> {
    if (!plan.workspace) return {};
    if (plan.workspace.existing) return { name: plan.workspace.name };
    const created = await this.deps.workspaces.create({
      user: input.user,
      appDefinition: plan.appDefinition.metadata.name,
      label: input.label,
      ...(plan.workspace.name ? { name: plan.workspace.name } : {}),
      byLaunch: true,
    });
    if (created) return { name: created.metadata.name, created: created.metadata.name };
    // Created concurrently by another launch: use it if it is this user's.
    const raced = await this.deps.workspaces.getOwned(input.user, plan.workspace.name);
    return { name: raced.metadata.name };
  }

  /**
   * Creates the launch's session. When another launch for the same workspace won the race to its name,
   * answers that launch's session instead (`answer`); any other failure removes the workspace this
   * call created and throws.
   */
  private async createSession(
    input: LaunchInput,
    appDefinitionName: string,
    workspace: LaunchWorkspace,
    deadline: number,
    releaseTurn: () => void,
  ): Promise<{ session: Session } | { answer: LaunchResult }> {
    const sessionName = workspace.name
      ? sessionNameFor(workspace.name)
      : dnsLabel(['session', appDefinitionName, input.user, randomUUID().slice(0, 8)]);
    try {
      return {
        session: await this.deps.resources.sessions.create(
          newSession(input, appDefinitionName, sessionName, workspace),
        ),
      };
    } catch (error) {
      let failure = error;
      let existing: Session | undefined;
      if (error instanceof Conflict && workspace.name) {
        // Another launch for the same workspace may have won the race: then answer its session. This
        // launch has nothing waiting for the operator: its turn goes to the next.
        releaseTurn();
        // Anything else holding the name (findSessionOf's 409) fails this launch.
        existing = await this.findSessionOf(sessionName, workspace.name, input.user, deadline).catch((e: unknown) => {
          failure = e;
          return undefined;
        });
      }
      if (existing) return { answer: { ...(await this.await(existing, deadline)), reused: true } };
      // The 409 path, like every failure before the session exists, removes what this call created.
      if (workspace.created) await this.deps.workspaces.deleteQuietly(workspace.created);
      throw failure;
    }
  }

  /**
   * Waits for the URL of the session this call created; on failure removes the session and the
   * workspace this call created, except a workspace's session still queued (`stillQueued`), and
   * answers a session whose URL was answered in the instant of its removal (`answerServed`).
   */
  private async awaitCreated(
    session: Session,
    workspace: LaunchWorkspace,
    deadline: number,
    onTakenUp: () => void,
  ): Promise<LaunchResult> {
    try {
      return { ...(await this.await(session, deadline, onTakenUp)), reused: false };
    } catch (error) {
      const queued = workspace.name ? this.stillQueued(session, error) : undefined;
      if (queued) throw queued;
      const serving = await this.removeSession(session, error);
      if (serving) return { ...(await this.answerServed(serving, error)), reused: false };
      if (workspace.created && !(error instanceof ServiceStopping)) {
        await this.deps.workspaces.deleteQuietly(workspace.created);
      }
      throw error;
    }
  }

  /**
   * Throws the limit refusal (552, 553), if any. An ephemeral launch has no name a retry could find
   * its session by: when the user is held at a limit by a session of the same app definition that
   * such a launch left starting, or serving but never answered (its call gone with a killed service),
   * this launch adopts it if it asked for the same values (answered here), and otherwise removes it
   * and starts afresh; a removed session no longer counts, here or for the operator. One whose URL
   * is answered in the instant of its removal is the user's and is answered instead
   * (`removeUnlessServing`).
   */
  private async passLimits(input: LaunchInput, plan: Plan, deadline: number): Promise<LaunchResult | undefined> {
    const appDefinitionName = plan.appDefinition.metadata.name;
    let refusal = this.limitRefusal(input.user, plan.appDefinition);
    if (refusal && !plan.workspace) {
      const orphan = await this.halfStartedEphemeral(input.user, appDefinitionName, input.env);
      if (orphan?.sameValues) return { ...(await this.adopt(orphan.session, deadline)), reused: true };
      if (orphan) {
        // Taken unless its URL reached someone: one its killed launch never answered goes too.
        const serving = await this.removeUnlessServing(orphan.session, urlHandedOut);
        if (serving) {
          this.deps.logger.info(
            { appDefinition: appDefinitionName, session: serving.metadata.name },
            'a session launched with other values served before its removal; answering it',
          );
          return { ...(await this.await(serving, deadline)), reused: true };
        }
        this.deps.logger.info(
          { appDefinition: appDefinitionName, session: orphan.session.metadata.name },
          'removed a session still starting, launched with other values, to start afresh',
        );
        refusal = this.limitRefusal(input.user, plan.appDefinition);
      }
    }
    if (refusal) throw new ApiError(refusal.code, refusal.reason);
    return undefined;
  }

  /**
   * A launch whose caller is gone before its session exists (a cancel that came before the session
   * it could stop) creates nothing more and removes what it made, answering 474 to nobody; else the
   * session would start for no one and the new workspace stay. Once the session exists and is
   * waited for, a caller that goes leaves it, as before: a later launch adopts it, a stop removes it.
   */
  private async abandonIfCallerGone(
    signal: AbortSignal | undefined,
    made: { workspace?: string; session?: Session },
  ): Promise<void> {
    if (!signal?.aborted) return;
    const error = new ApiError(ErrorCode.unknownSession, 'the launch was cancelled: its caller is gone');
    if (made.session) await this.removeSession(made.session, error);
    if (made.workspace) await this.deps.workspaces.deleteQuietly(made.workspace);
    throw error;
  }

  /**
   * A workspace's session still waiting at the operator's lazy-start gate when the launch's timeout
   * ends is not failed: it keeps its place, the launch answers 551 saying where it stands, and a
   * launch of the same workspace waits on it again (step 1 adopts it). Undefined for any other end.
   */
  private stillQueued(session: Session, error: unknown): ApiError | undefined {
    if (!(error instanceof ApiError) || error.code !== ErrorCode.launchTimeout) return undefined;
    const current = this.deps.sessions.get(session.metadata.name);
    if (!current || current.metadata.uid !== session.metadata.uid || !isQueued(current)) return undefined;
    const place = placeIn(queueOf(mayWaitAtGateIn(this.deps.sessions)), current);
    const where = place
      ? ` (position ${place.position}${place.estimatedWaitSeconds === undefined ? '' : `, about ${place.estimatedWaitSeconds} s`})`
      : '';
    this.deps.logger.info(
      { appDefinition: current.spec.appDefinition, session: current.metadata.name, position: place?.position },
      'launch timed out in the lazy-start queue; the session keeps its place',
    );
    return new ApiError(
      ErrorCode.launchTimeout,
      `the session is still queued for a start${where}; it keeps its place: launch again to wait for it`,
    );
  }

  /**
   * Waits for a session this call did not create (a workspace's, or an ephemeral one whose launch is
   * gone) and answers its URL. One that fails or does not run by the deadline is removed like the
   * launch's own, so no session nobody waits for holds the user's slot after the answer; a
   * workspace's still queued keeps its place (`stillQueued`). An ephemeral one was left starting at
   * this call's deadline (issue 27, item 10), for a creating launch that might still wait; it held the
   * user at sessionsPerUser until some later launch found it. Such a launch now answers 474, as it
   * would for any replacement. One that serves in the instant of its removal is answered instead.
   */
  private async adopt(session: Session, deadline: number): Promise<{ url: string; name: string; session?: Session }> {
    const fields = { appDefinition: session.spec.appDefinition, session: session.metadata.name };
    if (!isSessionReady(session)) this.deps.logger.info(fields, 'adopting a session still starting');
    else if (!urlHandedOut(session)) this.deps.logger.info(fields, 'adopting a session whose launch never answered');
    try {
      return await this.await(session, deadline);
    } catch (error) {
      if (session.spec.workspace) {
        const queued = this.stillQueued(session, error);
        if (queued) throw queued;
      }
      const latest = this.deps.sessions.get(session.metadata.name) ?? session;
      const serving = await this.removeSession(session, error);
      if (serving) return this.answerServed(serving, error);
      // The workspace its gone launch created goes too if it never served (the launch's own would have).
      if (!(error instanceof ServiceStopping)) await this.deps.workspaces.removeNeverServed(latest);
      throw error;
    }
  }

  private limitRefusal(user: string, appDefinition: AppDefinition) {
    return sessionLimitRefusal({
      appDefinition: appDefinition.spec,
      counts: countSessions(this.deps.sessions, { appDefinition: appDefinition.spec.name, user }),
      sessionsPerUser: this.deps.sessionsPerUser,
    });
  }

  /**
   * A session of `user` and `appDefinition` that an ephemeral launch of the service created and whose
   * URL reached nobody yet (`isHalfStartedEphemeral`): one whose launch may be gone with a killed
   * service. One asked for with the same values (`sameValues`: the digest matches `env`) comes first,
   * else the oldest. Found in the cache,
   * confirmed by one GET: whether to adopt or remove it must not rest on a status a watch event
   * behind (a session whose URL has just been answered is the user's, not an orphan).
   */
  private async halfStartedEphemeral(
    user: string,
    appDefinition: string,
    env: EnvironmentVars | undefined,
  ): Promise<{ session: Session; sameValues: boolean } | undefined> {
    const isHalfStarted = (s: Session) => isHalfStartedEphemeral(s, user, appDefinition);
    const sameValues = (s: Session) =>
      s.spec.sessionSecret !== undefined &&
      s.metadata.annotations?.[ANNOTATIONS.launchDigest] === launchDigest(s.spec.sessionSecret, env);
    const candidates = this.deps.sessions
      .list()
      .filter(isHalfStarted)
      .sort((a, b) => Number(sameValues(b)) - Number(sameValues(a)) || createdAt(a) - createdAt(b));
    if (!candidates[0]) return undefined;
    const session = await this.deps.resources.sessions.find(candidates[0].metadata.name);
    if (!session || session.metadata.uid !== candidates[0].metadata.uid || !isHalfStarted(session)) return undefined;
    this.deps.sessions.observe(session);
    return { session, sameValues: sameValues(session) };
  }

  /**
   * Removes a session whose launch failed, once the cache shows it gone or being deleted
   * (`removeUnlessServing`); returns it instead when it served in that instant (its URL came with the
   * deadline): it is the user's, and the launch answers it.
   */
  private async removeSession(session: Session, error: unknown): Promise<Session | undefined> {
    // Shutting down: leave the session, as an exiting process would; the retry adopts it.
    if (error instanceof ServiceStopping) return undefined;
    const serving = await this.removeUnlessServing(session);
    if (serving) return serving;
    this.deps.logger.info(
      { appDefinition: session.spec.appDefinition, session: session.metadata.name, err: describeError(error) },
      'launch failed; removed its session',
    );
    return undefined;
  }

  /**
   * Deletes a session that has not served, as it was read (uid and resourceVersion: `deleteAsRead`),
   * and returns once the cache shows it gone or being deleted. Deleted by name, a session that got
   * its URL in between went too, and the launch waiting for it answered 474. On a conflict it is read
   * again: gone or another uid, nothing to do; serving now (`status.url`), it is the user's and is
   * returned, not deleted; else deleted as read again. Other failures leave it, as before.
   */
  private async removeUnlessServing(
    session: Session,
    serves: (session: Session) => boolean = (s) => !!s.status?.url,
  ): Promise<Session | undefined> {
    const { sessions, resources } = this.deps;
    const name = session.metadata.name;
    const cached = sessions.get(name);
    let current: Session | undefined = cached?.metadata.uid === session.metadata.uid ? cached : session;
    for (let attempt = 0; current && attempt < REMOVAL_ATTEMPTS; attempt++) {
      // Being deleted already: it goes, whatever it serves.
      if (current.metadata.deletionTimestamp) return undefined;
      if (serves(current)) return current;
      try {
        if (await resources.sessions.deleteAsRead(current)) await sessions.reflectsDeletion(name, current.metadata.uid);
        return undefined;
      } catch (error) {
        if (!(error instanceof Conflict)) return undefined;
        const reread: Session | undefined = await resources.sessions.find(name).catch(() => undefined);
        if (reread) sessions.observe(reread);
        current = reread?.metadata.uid === session.metadata.uid ? reread : undefined;
      }
    }
    return current && serves(current) ? current : undefined;
  }

  /**
   * The live session of a workspace, or undefined; a Failed one is removed so a new launch can start.
   * One GET, not the cache: whether to reuse, wait for or replace the session must not rest on a
   * status a watch event behind (a session just failed would be answered as running, then fail).
   */
  private async findSessionOf(
    sessionName: string,
    workspaceName: string,
    user: string,
    deadline: number,
  ): Promise<Session | undefined> {
    const session = await this.deps.resources.sessions.find(sessionName);
    if (session) this.deps.sessions.observe(session);
    if (!session) return undefined;
    if (session.spec.workspace !== workspaceName || session.spec.user !== user) {
      throw new ApiError(409, SESSION_NAME_TAKEN);
    }
    if (isSessionFailed(session) || session.metadata.deletionTimestamp) {
      // A failed or stopping session makes way for the new one: the launch waits, on the cache's
      // events, until it is gone (its finalizer runs first) and then starts afresh.
      if (!session.metadata.deletionTimestamp) {
        await this.deps.resources.sessions.delete(sessionName).catch(() => undefined);
      }
      await waitForSessionGone(this.deps.sessions, session, deadline);
      return undefined;
    }
    return session;
  }

  private async await(
    session: Session,
    deadline: number,
    onTakenUp?: () => void,
  ): Promise<{ url: string; name: string; session?: Session }> {
    const url = await waitForSessionUrl(this.deps.sessions, session, deadline, onTakenUp);
    const latest = this.deps.sessions.get(session.metadata.name) ?? session;
    await this.markAnswered(latest);
    return { url, name: session.metadata.name, session: latest };
  }

  /** The answer of a launch whose session served in the instant of its removal; its own error when it does not run. */
  private async answerServed(
    serving: Session,
    error: unknown,
  ): Promise<{ url: string; name: string; session: Session }> {
    if (!isSessionReady(serving)) throw error;
    await this.markAnswered(serving);
    return { url: serving.status!.url!, name: serving.metadata.name, session: serving };
  }

  /**
   * Clears the unanswered mark of an ephemeral session before its URL goes out: from then on it may
   * be in someone's hands, and no launch at a limit takes it (`isHalfStartedEphemeral`). Written on
   * that session (its uid: another of the name is refused, 422), with the decision's annotations the
   * spec asks for (the operator leaves them to this write: one write fewer per launch), with no
   * resourceVersion: a conflict would cost a read and a second write on the path to the answer. This
   * write changes the resourceVersion, so a replacing launch's delete (preconditions as read) and it
   * cannot both win: a session whose delete came first shows its deletionTimestamp in the answer and
   * answers 474, never a URL that is going away. Written before the answer: a kill between the two leaves a session nobody holds but nobody
   * takes either (held until its idle stop, as before the mark). A failed write fails the launch.
   */
  private async markAnswered(session: Session): Promise<void> {
    if (session.metadata.annotations?.[ANNOTATIONS.unanswered] !== 'true') return;
    const { name, uid } = session.metadata;
    try {
      // The same write carries the decision's annotations, which the operator leaves to it.
      const annotations = {
        [ANNOTATIONS.unanswered]: null,
        ...missingDecisionAnnotations(session.metadata, session.status),
      };
      const body = { metadata: { uid, annotations } };
      const marked = await this.deps.resources.sessions.mergePatch(
        name,
        body,
        'recording that the session was answered',
        { ahead: true },
      );
      this.deps.sessions.observe(marked);
      if (!marked.metadata.deletionTimestamp) return;
    } catch (error) {
      // Gone (474), or another session of the name (422, mapped to 400): not this launch's to answer.
      if (
        !(error instanceof ApiError) ||
        ![ErrorCode.unknownSession, ErrorCode.badRequest].includes(error.code as 474 | 400)
      )
        throw error;
    }
    throw new ApiError(ErrorCode.unknownSession, 'the session was removed before its URL was answered');
  }
}

/** The Session a launch creates, with a fresh session secret. */
function newSession(input: LaunchInput, appDefinitionName: string, name: string, workspace: LaunchWorkspace) {
  // 32 characters: usable as-is as the authentication proxy's cookie secret (an AES-256 key).
  const sessionSecret = randomBytes(16).toString('hex');
  return {
    metadata: {
      name,
      // The service's mark on the sessions it creates, and what this launch asked for: a later
      // ephemeral launch adopts only a session so marked, and only when the digest matches.
      annotations: sessionAnnotations(sessionSecret, input.env, {
        createdWorkspace: workspace.created !== undefined,
        ephemeral: workspace.name === undefined,
      }),
      // The operator's finalizer (its route goes before the session), set here so that the
      // operator's launch makes no write of the session's metadata before the URL.
      finalizers: [SESSION_FINALIZER],
      labels: {
        [LABELS.user]: userLabelValue(input.user),
        [LABELS.appDefinition]: appDefinitionName,
        ...(workspace.name ? { [LABELS.workspace]: workspace.name } : {}),
      },
    },
    spec: {
      user: input.user,
      appDefinition: appDefinitionName,
      ...(workspace.name ? { workspace: workspace.name } : {}),
      ...(input.env?.fromMap ? { envVars: input.env.fromMap } : {}),
      ...(input.env?.fromConfigMaps ? { envVarsFromConfigMaps: input.env.fromConfigMaps } : {}),
      ...(input.env?.fromSecrets ? { envVarsFromSecrets: input.env.fromSecrets } : {}),
      sessionSecret,
    },
  };
}

/**
 * What a launch writes on its session: the launch digest, and whether this launch created the
 * workspace (the workspace's first session: `neverServedWorkspace`).
 */
function sessionAnnotations(
  sessionSecret: string,
  env: EnvironmentVars | undefined,
  made: { createdWorkspace: boolean; ephemeral: boolean },
): Record<string, string> {
  return {
    [ANNOTATIONS.launchDigest]: launchDigest(sessionSecret, env),
    ...(made.createdWorkspace ? { [ANNOTATIONS.createdWorkspace]: 'true' } : {}),
    // Only an ephemeral session needs it: a workspace's is found by name, and a retry answers it.
    ...(made.ephemeral ? { [ANNOTATIONS.unanswered]: 'true' } : {}),
  };
}

/** Conflicts a removal reads again before it gives up (each one a status the operator wrote meanwhile). */
const REMOVAL_ATTEMPTS = 5;

const SESSION_NAME_TAKEN = "the workspace's session name is held by another session";

/**
 * A session of `user` and `appDefinition` that an ephemeral launch of the service created (it carries
 * the launch digest), whose URL reached nobody and that is active: not failed, not stopping, not being
 * deleted. A stopping session is on its way out; adopted, it would answer the launch 474. Reached
 * nobody: it has no URL yet, or it serves but its launch never answered (`urlHandedOut`: killed
 * between the two; issue 27, item 10) and no activity was reported for it (someone who listed it
 * and opened it would have). Such a session held the user at sessionsPerUser until its idle stop.
 */
export function isHalfStartedEphemeral(session: Session, user: string, appDefinition: string): boolean {
  return (
    session.spec.user === user &&
    session.spec.appDefinition === appDefinition &&
    session.spec.workspace === undefined &&
    session.metadata.annotations?.[ANNOTATIONS.launchDigest] !== undefined &&
    !urlHandedOut(session) &&
    !session.status?.lastActivity &&
    isActiveSession(session)
  );
}

function createdAt(session: Session): number {
  return new Date(session.metadata.creationTimestamp ?? 0).getTime();
}

function outcomeOf(error: unknown): LaunchOutcome {
  if (!(error instanceof ApiError)) return 'error';
  if (error.code === ErrorCode.launchTimeout) return 'timeout';
  if (error.code < 500) return 'refused';
  if (error.code === ErrorCode.maxInstancesReached || error.code === ErrorCode.sessionsPerUserReached) return 'refused';
  return 'failed';
}
