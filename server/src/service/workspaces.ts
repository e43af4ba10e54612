import { randomUUID } from 'node:crypto';
import { LABELS } from '../model/api-group.js';
import { ErrorCode } from '../model/error-codes.js';
import { generatedWorkspaceName, isDnsLabel, sessionNameFor, userLabelValue } from '../model/names.js';
import type { WorkspaceItem } from '../model/requests.js';
import type { Workspace } from '../model/workspace.js';
import { isConflict } from '../kube/client.js';
import type { IdeCloudResources } from '../kube/resources.js';
import { ApiError, fromKubernetes } from './errors.js';
import { toWorkspaceItem } from './views.js';

export function userSelector(user: string): string {
  return `${LABELS.user}=${userLabelValue(user)}`;
}

/** Workspaces: a user's durable contexts. Users see and touch only their own. */
export class WorkspaceService {
  constructor(private readonly resources: IdeCloudResources) {}

  async listOf(user: string): Promise<WorkspaceItem[]> {
    try {
      const selector = userSelector(user);
      const [workspaces, sessions] = await Promise.all([
        this.resources.workspaces.list(selector),
        this.resources.sessions.list(selector),
      ]);
      const active = new Set(
        sessions.filter((s) => s.spec.user === user && !s.metadata.deletionTimestamp).map((s) => s.spec.workspace),
      );
      return workspaces
        .filter((w) => w.spec.user === user)
        .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
        .map((w) => toWorkspaceItem(w, active.has(w.metadata.name)));
    } catch (error) {
      throw fromKubernetes(error, 'listing workspaces');
    }
  }

  /** The user's workspace by name: 471 when unknown or invalid, 403 when it belongs to someone else. */
  async findOwned(user: string, name: string): Promise<Workspace | undefined> {
    if (!isDnsLabel(name)) throw new ApiError(ErrorCode.unknownWorkspace, 'invalid workspace name');
    let workspace: Workspace | undefined;
    try {
      workspace = await this.resources.workspaces.find(name);
    } catch (error) {
      throw fromKubernetes(error, 'reading the workspace');
    }
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

  /** Creates a workspace; `name` unset: `ws-<appDef>-<user>-<uuid>`. Answers undefined on 409. */
  async create(input: {
    user: string;
    appDefinition?: string;
    label?: string;
    name?: string;
  }): Promise<Workspace | undefined> {
    const name = input.name ?? generatedWorkspaceName(input.appDefinition ?? 'workspace', input.user, randomUUID());
    try {
      return await this.resources.workspaces.create({
        metadata: {
          name,
          labels: {
            [LABELS.user]: userLabelValue(input.user),
            ...(input.appDefinition ? { [LABELS.appDefinition]: input.appDefinition } : {}),
          },
        },
        spec: {
          user: input.user,
          ...(input.appDefinition ? { appDefinition: input.appDefinition } : {}),
          ...(input.label !== undefined ? { label: input.label } : {}),
        },
      });
    } catch (error) {
      if (isConflict(error)) return undefined;
      throw fromKubernetes(error, 'creating the workspace');
    }
  }

  /** Deletes the user's workspace and ends its session first (a session without its claim breaks). */
  async delete(user: string, name: string): Promise<boolean> {
    await this.getOwned(user, name);
    try {
      const [labelled, byName] = await Promise.all([
        this.resources.sessions.list(`${LABELS.workspace}=${name}`),
        this.resources.sessions.find(sessionNameFor(name)),
      ]);
      const names = new Set(
        [...labelled, ...(byName ? [byName] : [])].filter((s) => s.spec.workspace === name).map((s) => s.metadata.name),
      );
      for (const session of names) await this.resources.sessions.delete(session);
      await this.resources.workspaces.delete(name);
      return true;
    } catch (error) {
      throw fromKubernetes(error, 'deleting the workspace');
    }
  }

  /** Removes a workspace this very request created (cleanup after a failed launch). */
  async deleteQuietly(name: string): Promise<void> {
    await this.resources.workspaces.delete(name).catch(() => undefined);
  }
}
