import { randomUUID } from 'node:crypto';
import { ANNOTATIONS, LABELS } from '../model/api-group.js';
import { ErrorCode } from '../model/error-codes.js';
import { checkWorkspaceLimit } from '../model/limits.js';
import {
  generatedWorkspaceName,
  isDnsLabel,
  isLandingNameOfAnotherUser,
  sessionNameFor,
  userLabelValue,
} from '../model/names.js';
import type { WorkspaceItem } from '../model/requests.js';
import type { Workspace } from '../model/workspace.js';
import { neverServedWorkspace, type Session } from '../model/session.js';
import type { CachedResource } from './cache.js';
import { ApiError, Conflict } from './errors.js';
import type { ServiceResources } from './resources.js';
import { toWorkspaceItem } from './views.js';

/** Whether the object carries the user's label and names the user in its spec (what listings show). */
function ownedBy(object: { metadata: { labels?: Record<string, string> }; spec: { user: string } }, user: string) {
  return object.metadata.labels?.[LABELS.user] === userLabelValue(user) && object.spec.user === user;
}

/**
 * Workspaces: a user's durable contexts. Users see and touch only their own. Reads come from the
 * workspace and session caches (a name the cache does not hold is looked up once); the service's own
 * writes are reflected in the caches before it answers.
 */
export class WorkspaceService {
  /** Names of the creates in flight per user; those not in the cache yet count, so concurrent creates cannot pass the limit together. */
  private readonly creating = new Map<string, Set<string>>();

  constructor(
    private readonly resources: ServiceResources,
    private readonly caches: { workspaces: CachedResource<Workspace>; sessions: CachedResource<Session> },
    private readonly workspacesPerUser: number,
  ) {}

  listOf(user: string): WorkspaceItem[] {
    const active = new Set(
      this.caches.sessions
        .list()
        .filter((s) => ownedBy(s, user) && !s.metadata.deletionTimestamp)
        .map((s) => s.spec.workspace),
    );
    return this.caches.workspaces
      .list()
      .filter((w) => ownedBy(w, user))
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
      .map((w) => toWorkspaceItem(w, active.has(w.metadata.name)));
  }

  /** The user's workspace by name: 471 when unknown or invalid, 403 when it belongs to someone else. */
  async findOwned(user: string, name: string): Promise<Workspace | undefined> {
    if (!isDnsLabel(name)) throw new ApiError(ErrorCode.unknownWorkspace, 'invalid workspace name');
    const workspace = await this.caches.workspaces.find(name);
    if (!workspace) return undefined;
    if (workspace.spec.user !== user) throw new ApiError(ErrorCode.forbidden, 'the workspace belongs to another user');
    if (workspace.metadata.deletionTimestamp) {
      throw new ApiError(ErrorCode.unknownWorkspace, 'the workspace is being deleted');
    }
    return workspace;
  }

  async getOwned(user: string, name: string): Promise<Workspace> {
    const workspace = await this.findOwned(user, name);
    if (!workspace) throw new ApiError(ErrorCode.unknownWorkspace, 'unknown workspace');
    return workspace;
  }

  /**
   * 403 when `name` is a landing-page name made for another user (model/names.ts): such a name is
   * reserved for its user, so nobody can take a user's landing workspace before they first open it.
   */
  checkNameFor(user: string, name: string): void {
    if (isLandingNameOfAnotherUser(name, user)) {
      throw new ApiError(ErrorCode.forbidden, 'the workspace name is reserved for another user');
    }
  }

  /**
   * Creates a workspace; `name` unset: `ws-<appDef>-<user>-<uuid>`. Answers undefined on 409; 554 when
   * the user is at `workspacesPerUser` (`checkWorkspaceLimit`), checked with the creates in flight on
   * this replica (another replica's create a watch event old may still slip through).
   */
  async create(input: {
    user: string;
    appDefinition?: string;
    label?: string;
    name?: string;
    /** Made by a launch, whose session's warm instance may bring the claim (model/workspace.ts, takesWarmClaim). */
    byLaunch?: boolean;
  }): Promise<Workspace | undefined> {
    if (input.name !== undefined) this.checkNameFor(input.user, input.name);
    const name = input.name ?? generatedWorkspaceName(input.appDefinition ?? 'workspace', input.user, randomUUID());
    const workspaces = this.caches.workspaces.list();
    const inFlight = this.creating.get(input.user) ?? new Set<string>();
    // A create whose watch event came before its answer is in the cache already: count it once.
    const cached = new Set(workspaces.map((w) => w.metadata.name));
    const pending = [...inFlight].filter((n) => !cached.has(n)).length;
    const refusal = checkWorkspaceLimit({
      user: input.user,
      workspaces,
      workspacesPerUser: this.workspacesPerUser,
      pending,
    });
    if (refusal) throw new ApiError(refusal.code, refusal.reason);
    inFlight.add(name);
    this.creating.set(input.user, inFlight);
    try {
      const created = await this.resources.workspaces.create({
        metadata: {
          name,
          labels: {
            [LABELS.user]: userLabelValue(input.user),
            ...(input.appDefinition ? { [LABELS.appDefinition]: input.appDefinition } : {}),
          },
          ...(input.byLaunch ? { annotations: { [ANNOTATIONS.createdByLaunch]: 'true' } } : {}),
        },
        spec: {
          user: input.user,
          ...(input.appDefinition ? { appDefinition: input.appDefinition } : {}),
          ...(input.label !== undefined ? { label: input.label } : {}),
        },
      });
      this.caches.workspaces.observe(created);
      return created;
    } catch (error) {
      if (error instanceof Conflict) return undefined;
      throw error;
    } finally {
      inFlight.delete(name);
      if (inFlight.size === 0) this.creating.delete(input.user);
    }
  }

  /** Deletes the user's workspace and ends its session first (a session without its claim breaks). */
  async delete(user: string, name: string): Promise<boolean> {
    const workspace = await this.getOwned(user, name);
    const deleted: Promise<void>[] = [];
    const action = 'deleting the workspace';
    const labelled = this.caches.sessions.list().filter((s) => s.metadata.labels?.[LABELS.workspace] === name);
    const byName = await this.caches.sessions.find(sessionNameFor(name));
    const sessions = new Map(
      [...labelled, ...(byName ? [byName] : [])]
        .filter((s) => s.spec.workspace === name)
        .map((s) => [s.metadata.name, s] as const),
    );
    for (const [sessionName, session] of sessions) {
      if (await this.resources.sessions.delete(sessionName, action)) {
        deleted.push(this.caches.sessions.reflectsDeletion(sessionName, session.metadata.uid));
      }
    }
    if (await this.resources.workspaces.delete(name, action)) {
      deleted.push(this.caches.workspaces.reflectsDeletion(name, workspace.metadata.uid));
    }
    await Promise.all(deleted);
    return true;
  }

  /**
   * Removes the workspace of a stopped or failed session that was its first and never served
   * (`neverServedWorkspace`): it holds no work, and left behind it would hold a claim.
   */
  async removeNeverServed(session: Session): Promise<void> {
    const name = neverServedWorkspace(session);
    const workspace = name ? this.caches.workspaces.get(name) : undefined;
    if (!name || (workspace && workspace.spec.user !== session.spec.user)) return;
    await this.deleteQuietly(name);
  }

  /** Removes a workspace this very request created (cleanup after a failed launch). */
  async deleteQuietly(name: string): Promise<void> {
    const uid = this.caches.workspaces.get(name)?.metadata.uid;
    if (await this.resources.workspaces.delete(name).catch(() => false)) {
      await this.caches.workspaces.reflectsDeletion(name, uid);
    }
  }
}
