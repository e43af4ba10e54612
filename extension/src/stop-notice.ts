// The IDE's side of the session's end: shows the operator's stop notice (read from the bridge on this
// host, GET /notice) once per notice, with the minutes left, and reports the student's activity
// (POST /activity) so the operator, which reads it from the bridge before an idle stop, keeps the
// session. Reports are throttled: one per interval is enough for a timeout counted in minutes.
import type { Logger } from './logger.js';
import { DATA_BRIDGE_PATHS, type StopNotice } from '../../server/src/model/data-bridge.js';
import type { HeldNotice } from './lifecycle.js';

export const DEFAULT_NOTICE_POLL_MS = 5000;
export const DEFAULT_ACTIVITY_THROTTLE_MS = 10_000;
/** The action of an idle notice: choosing it counts as activity. */
export const KEEP_ACTION = 'Keep working';

export interface StopNoticeDeps {
  /** The bridge on this host, e.g. http://127.0.0.1:16281. */
  source: string;
  token: string;
  /** Shows a warning with optional actions; resolves with the one chosen (vscode.window.showWarningMessage). */
  show: (message: string, ...actions: string[]) => PromiseLike<string | undefined>;
  logger: Logger;
  pollMs?: number;
  activityThrottleMs?: number;
  fetch?: typeof fetch;
  clock?: () => number;
}

/** The text of a notice: why, the minutes left, and what happens to the work. */
export function noticeMessage(notice: StopNotice): string {
  const minutes = Math.ceil(notice.secondsLeft / 60);
  const left =
    notice.secondsLeft < 60 ? 'in less than a minute' : `in about ${minutes} minute${minutes === 1 ? '' : 's'}`;
  const why =
    notice.reason === 'Idle'
      ? `This session has been idle and stops ${left}. Any activity in the IDE keeps it running.`
      : `This session reaches its maximum lifetime and stops ${left}.`;
  const work = notice.saveWork
    ? 'Uncommitted changes will be pushed to a new branch of your repository.'
    : 'Commit and push your work before then.';
  return `${why} ${work}`;
}

export class StopNoticeWatcher {
  private timer: NodeJS.Timeout | undefined;
  private shownId = 0;
  private readable = true;
  private lastReport = Number.NEGATIVE_INFINITY;
  private readonly fetch: typeof fetch;
  private readonly clock: () => number;

  constructor(private readonly deps: StopNoticeDeps) {
    this.fetch = deps.fetch ?? fetch;
    this.clock = deps.clock ?? Date.now;
  }

  start(): void {
    void this.poll();
    this.timer = setInterval(() => void this.poll(), this.deps.pollMs ?? DEFAULT_NOTICE_POLL_MS);
  }

  /** Reads the notice once and shows it when it is new. */
  async poll(): Promise<void> {
    let notice: HeldNotice | null;
    try {
      const response = await this.request('GET', DATA_BRIDGE_PATHS.notice);
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      notice = ((await response.json()) as { notice: HeldNotice | null }).notice;
    } catch (error) {
      // Once per outage, not every poll: a bridge that is down would fill the channel.
      if (this.readable) {
        this.deps.logger.warn(
          `the stop notice could not be read (${error instanceof Error ? error.message : 'error'})`,
        );
      }
      this.readable = false;
      return;
    }
    this.readable = true;
    if (!notice || notice.id <= this.shownId) return;
    this.shownId = notice.id;
    this.deps.logger.info(`stop notice ${notice.id}: ${notice.reason} in ${notice.secondsLeft} s`);
    const actions = notice.reason === 'Idle' ? [KEEP_ACTION] : [];
    void Promise.resolve(this.deps.show(noticeMessage(notice), ...actions)).then((chosen) => {
      if (chosen === KEEP_ACTION) void this.reportActivity(true);
    });
  }

  /** Tells the bridge the student is active; at most once per throttle interval unless `now`. */
  async reportActivity(now = false): Promise<void> {
    const at = this.clock();
    if (!now && at - this.lastReport < (this.deps.activityThrottleMs ?? DEFAULT_ACTIVITY_THROTTLE_MS)) return;
    this.lastReport = at;
    try {
      const response = await this.request('POST', DATA_BRIDGE_PATHS.activity);
      await response.arrayBuffer();
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
    } catch (error) {
      this.lastReport = Number.NEGATIVE_INFINITY; // the next event tries again
      this.deps.logger.warn(`activity could not be reported (${error instanceof Error ? error.message : 'error'})`);
    }
  }

  dispose(): void {
    clearInterval(this.timer);
  }

  private request(method: 'GET' | 'POST', path: string): Promise<Response> {
    return this.fetch(`${this.deps.source.replace(/\/$/, '')}${path}`, {
      method,
      headers: { authorization: `Bearer ${this.deps.token}` },
      signal: AbortSignal.timeout(2000),
    });
  }
}
