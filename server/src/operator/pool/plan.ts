/** Pure arithmetic of a warm pool: what to create, delete, recycle or keep. */
import { AppDefinitionReadyReason, type PoolStatus } from '../../model/app-definition.js';
import { stringHash32 } from '../../model/names.js';

export interface PoolInstanceState {
  id: number;
  /** App definition generation the instance was built for. */
  generation: number;
  /** Reservation still held by a live session. */
  reserved: boolean;
  /** Reservation whose session has ended (gone, failed, stopping): to be handled by the table. */
  released: boolean;
  ready: boolean;
}

export interface PoolPlan {
  /** Ids of missing instances to create. */
  create: number[];
  /** Instances to delete (above minInstances and not needed anymore). */
  delete: number[];
  /** Instances to delete and create again for the current generation. */
  recreate: number[];
  /** Instances whose session ended: reservation dropped, pod restarted, back in the pool. */
  returnToPool: number[];
}

/**
 * The pool table: an ended reservation is deleted when its id is above minInstances, recreated when
 * built for an older generation, otherwise returned to the pool. Free instances above minInstances are
 * deleted, free outdated ones recreated, and ids 1..minInstances that do not exist are created.
 * Reserved instances are never touched: running sessions keep their pods.
 */
export function planPool(input: {
  minInstances: number;
  generation: number;
  instances: readonly PoolInstanceState[];
}): PoolPlan {
  const plan: PoolPlan = { create: [], delete: [], recreate: [], returnToPool: [] };
  const existing = new Set(input.instances.map((i) => i.id));
  for (const instance of input.instances) {
    if (instance.reserved) continue;
    if (instance.id > input.minInstances) plan.delete.push(instance.id);
    else if (instance.generation !== input.generation) plan.recreate.push(instance.id);
    else if (instance.released) plan.returnToPool.push(instance.id);
  }
  for (let id = 1; id <= input.minInstances; id++) if (!existing.has(id)) plan.create.push(id);
  return plan;
}

/**
 * The pool's part of the AppDefinition status: its counts (the instances ready, free or reserved) and
 * its Ready condition (every free instance ready, nothing being created, deleted or returned). A
 * reservation of a ready instance changes none of it, so a launch writes no AppDefinition status.
 * `instances`: those the pass keeps; `acted`: whether it changed any.
 */
export function poolStatus(
  minInstances: number,
  instances: readonly PoolInstanceState[],
  acted: boolean,
): { pool: PoolStatus; ready: { status: 'True' | 'False'; reason: string; message: string } } {
  const pool = { desired: minInstances, ready: instances.filter((i) => i.ready && !i.released).length };
  const starting = instances.filter((i) => !i.reserved && !i.released && !i.ready).length;
  const [reason, message] = acted
    ? [AppDefinitionReadyReason.poolChanging, 'instances being created, deleted or returned']
    : starting > 0
      ? [AppDefinitionReadyReason.instancesStarting, `free instances starting: ${starting}`]
      : [AppDefinitionReadyReason.poolReady, `instances ready: ${pool.ready} of ${minInstances}`];
  return { pool, ready: { status: reason === AppDefinitionReadyReason.poolReady ? 'True' : 'False', reason, message } };
}

/** How a free instance may serve a reservation: `ready` ones are tried first; undefined: not at all. */
export type CandidateState = 'ready' | 'starting' | undefined;

/**
 * The order in which a session tries the free instances, made as it is taken (a launch mostly takes
 * the first, so a reservation does not look at every free instance of its pool): `free` as given,
 * rotated by the 32-bit string hash of the session's name, so concurrent launches rarely aim at the
 * same instance first; the ready ones before those still starting; the ones another of this process's
 * reservations is writing (`claiming`) last, since that write makes theirs a 409. `state` says how
 * each may serve (undefined: outdated or out of the pool's ids, never tried).
 */
export function* reservationCandidates<T>(
  free: readonly T[],
  sessionName: string,
  state: (candidate: T) => CandidateState,
  claiming: (candidate: T) => boolean = () => false,
): Generator<T, void, undefined> {
  const count = free.length;
  if (count === 0) return;
  const offset = (stringHash32(sessionName) >>> 0) % count;
  // Each once: one tried (a 409) may be another reservation's by a later pass.
  const yielded = new Set<T>();
  for (const busy of [false, true]) {
    for (const wanted of ['ready', 'starting'] as const) {
      for (let k = 0; k < count; k++) {
        const candidate = free[(offset + k) % count]!;
        if (yielded.has(candidate) || claiming(candidate) !== busy || state(candidate) !== wanted) continue;
        yielded.add(candidate);
        yield candidate;
      }
    }
  }
}
