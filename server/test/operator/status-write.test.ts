// The one end-of-pass status write (runtime/status.ts): skipped when unchanged, the resourceVersion
// as precondition only when given, the answer observed, 404 and 409 as results, any other error thrown.
import assert from 'node:assert/strict';
import { writeStatusOnce } from '../../src/operator/runtime/status.js';

type Status = { phase?: string; ready?: number };
type Thing = { metadata: { name: string; resourceVersion: string }; status: Status };

function target(answer: (status: Status) => Promise<Thing>) {
  const patches: { name: string; status: Status; preconditions?: { resourceVersion?: string } }[] = [];
  const observed: Thing[] = [];
  return {
    patches,
    observed,
    target: {
      api: {
        patchStatus: (name: string, status: Status, preconditions?: { resourceVersion?: string }) => {
          patches.push({ name, status, preconditions });
          return answer(status);
        },
      },
      cache: { observe: (object: Thing) => void observed.push(object) },
    },
  };
}

const answered = async (status: Status): Promise<Thing> => ({ metadata: { name: 'a', resourceVersion: '8' }, status });
const failing = (code: number) => async (): Promise<Thing> =>
  Promise.reject(Object.assign(new Error(`${code}`), { code }));

describe('operator: the end-of-pass status write', () => {
  it('writes nothing when the status says the same, whatever the key order', async () => {
    const t = target(answered);
    const result = await writeStatusOnce(t.target, 'a', {
      previous: { ready: 1, phase: 'P' },
      next: { phase: 'P', ready: 1 },
    });
    assert.deepEqual(result, { kind: 'unchanged' });
    assert.deepEqual(t.patches, []);
  });

  it('writes a change with the resourceVersion read as its precondition and observes the answer', async () => {
    const t = target(answered);
    const result = await writeStatusOnce(t.target, 'a', { previous: {}, next: { ready: 2 }, resourceVersion: '7' });
    assert.equal(result.kind, 'written');
    assert.deepEqual(t.patches, [{ name: 'a', status: { ready: 2 }, preconditions: { resourceVersion: '7' } }]);
    assert.deepEqual(t.observed, [{ metadata: { name: 'a', resourceVersion: '8' }, status: { ready: 2 } }]);
  });

  it('sends no precondition when none is given', async () => {
    const t = target(answered);
    await writeStatusOnce(t.target, 'a', { previous: undefined, next: { ready: 1 } });
    assert.deepEqual(t.patches[0]?.preconditions, {});
  });

  it('tells a gone object and a conflict as results, observing nothing, and throws any other error', async () => {
    const gone = target(failing(404));
    assert.deepEqual(await writeStatusOnce(gone.target, 'a', { previous: {}, next: { ready: 1 } }), { kind: 'gone' });
    const changed = target(failing(409));
    assert.deepEqual(
      await writeStatusOnce(changed.target, 'a', { previous: {}, next: { ready: 1 }, resourceVersion: '7' }),
      {
        kind: 'conflict',
      },
    );
    assert.deepEqual([...gone.observed, ...changed.observed], []);
    const broken = target(failing(500));
    await assert.rejects(writeStatusOnce(broken.target, 'a', { previous: {}, next: { ready: 1 } }), { code: 500 });
  });
});
