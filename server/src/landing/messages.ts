// What the landing page tells a person when a launch cannot go on. Pure: used by the browser bundle
// and the unit tests. Messages never quote request values (they may be secrets).

export type Failure =
  /** The service answered with an error status (DESIGN.md codes). */
  | { kind: 'status'; code: number }
  /** The ping failed: the service is down or in maintenance. */
  | { kind: 'maintenance' }
  /** The browser lost the network (fetch failed, or the browser went offline). */
  | { kind: 'network' }
  /** The user cancelled the launch. */
  | { kind: 'cancelled' }
  /** appDef names no app of this landing page. */
  | { kind: 'unknown-app' }
  /** Sign-in with the identity provider failed. */
  | { kind: 'login' };

export interface HumanMessage {
  title: string;
  text: string;
  /** Whether trying again later can help (the page then offers a retry button). */
  retry: boolean;
}

const STATUS: Record<number, HumanMessage> = {
  400: {
    title: 'The launch request was not accepted',
    text: 'Some launch details are missing or malformed. Please open the link from your learning platform again.',
    retry: false,
  },
  401: {
    title: 'Please sign in again',
    text: 'Your sign-in has expired or could not be verified.',
    retry: true,
  },
  403: {
    title: 'Not allowed',
    text: 'This launch belongs to a different account than the one you are signed in with.',
    retry: false,
  },
  470: {
    title: 'The landing page is misconfigured',
    text: 'The landing page is not allowed to talk to the IDE service. Please tell your administrator.',
    retry: false,
  },
  471: {
    title: 'Unknown workspace',
    text: 'The workspace of this launch does not exist or its name is invalid.',
    retry: false,
  },
  473: {
    title: 'This IDE type is not available',
    text: 'The requested IDE type is not installed on this server. Please tell your course staff.',
    retry: false,
  },
  474: {
    title: 'The session ended',
    text: 'The session stopped before it was ready.',
    retry: true,
  },
  475: {
    title: 'The workspace belongs to another IDE type',
    text: 'A workspace for this repository already exists with a different IDE type.',
    retry: false,
  },
  551: {
    title: 'The IDE took too long to start',
    text: 'The IDE did not become ready in time. The servers may be busy; please try again in a few minutes.',
    retry: true,
  },
  552: {
    title: 'All IDEs of this type are in use',
    text: 'The maximum number of running IDEs of this type has been reached. Please try again later.',
    retry: true,
  },
  553: {
    title: 'You already have a running IDE',
    text: 'You have reached the number of IDEs you may run at the same time. Close another IDE and try again.',
    retry: true,
  },
  554: {
    title: 'You have too many workspaces',
    text: 'Each course repository you open keeps a workspace with your files, and you have as many as you may have. Ask your course staff to remove one you no longer need.',
    retry: false,
  },
};

const OTHER: Record<Exclude<Failure['kind'], 'status'>, HumanMessage> = {
  maintenance: {
    title: 'The IDE service is under maintenance',
    text: 'The IDE service cannot be reached right now. Please try again in a few minutes.',
    retry: true,
  },
  network: {
    title: 'No network connection',
    text: 'Your browser lost the connection to the server. Check your network and try again.',
    retry: true,
  },
  cancelled: {
    title: 'Launch cancelled',
    text: 'The IDE was stopped. You can start it again at any time.',
    retry: true,
  },
  'unknown-app': {
    title: 'Unknown IDE type',
    text: 'The link names an IDE type this landing page does not offer. Please tell your course staff.',
    retry: false,
  },
  login: {
    title: 'Sign-in failed',
    text: 'Signing in with your account did not succeed. Please try again.',
    retry: true,
  },
};

/** The human message for a failure; unknown statuses fall back by class (4xx request, 5xx server). */
export function messageFor(failure: Failure): HumanMessage {
  if (failure.kind !== 'status') return OTHER[failure.kind];
  const known = STATUS[failure.code];
  if (known) return known;
  if (failure.code === 502 || failure.code === 503 || failure.code === 504) return OTHER.maintenance;
  if (failure.code >= 500) {
    return {
      title: 'Something went wrong',
      text: 'The IDE service could not start your IDE. Please try again; if it keeps failing, tell your course staff.',
      retry: true,
    };
  }
  return {
    title: 'The launch was refused',
    text: 'The IDE service did not accept this launch.',
    retry: false,
  };
}

/** The steps shown on the progress bar, in order. */
export const PROGRESS_STEPS = [
  { id: 'requested', label: 'Request sent' },
  { id: 'created', label: 'Session created' },
  { id: 'starting', label: 'Starting the IDE' },
  { id: 'routed', label: 'Connecting' },
  { id: 'ready', label: 'Ready' },
] as const;
export type ProgressStepId = (typeof PROGRESS_STEPS)[number]['id'];

/** What one progress event of the service's stream says about the launch (service event shape). */
export interface SessionSnapshot {
  phase?: string;
  url?: string;
  conditions?: { type: string; status: string }[];
  /** While the launch waits for a start slot: its place in the queue, 1 next (service: model/admission.ts). */
  queue?: { position: number; estimatedWaitSeconds?: number };
}

/** A wait in words: seconds under a minute, else whole minutes rounded up. */
function duration(seconds: number): string {
  if (seconds < 60) return seconds <= 1 ? 'a second' : `${seconds} seconds`;
  const minutes = Math.ceil(seconds / 60);
  return minutes === 1 ? 'a minute' : `${minutes} minutes`;
}

/**
 * What the page says while the launch waits in the queue for a start slot (many launches at once,
 * e.g. at a lecture's start): where it stands and about how long, instead of a timeout.
 */
export function queueText(queue: NonNullable<SessionSnapshot['queue']>): string {
  const place = queue.position === 1 ? 'You are next in line' : `You are number ${queue.position} in line`;
  const wait = queue.estimatedWaitSeconds === undefined ? '' : `, about ${duration(queue.estimatedWaitSeconds)} to go`;
  return `Many IDEs are starting right now. ${place} for yours${wait}; please keep this page open.`;
}

/** The furthest step a session snapshot shows. Phase and conditions both count; steps never go back. */
export function stepOf(session: SessionSnapshot): ProgressStepId {
  const condition = (type: string) => session.conditions?.some((c) => c.type === type && c.status === 'True');
  if ((session.phase === 'Running' && session.url) || condition('Ready')) return 'ready';
  if (condition('Routed')) return 'routed';
  if (session.phase === 'Starting' || session.phase === 'Running' || condition('Reserved')) return 'starting';
  return 'created';
}

export function stepIndex(step: ProgressStepId): number {
  return PROGRESS_STEPS.findIndex((s) => s.id === step);
}
