// The min-heap under the operator's work queue (server/src/operator/runtime/ranked-queue.ts).
import assert from 'node:assert/strict';
import { RankedQueue } from '../../src/operator/runtime/ranked-queue.js';

describe('ranked queue', () => {
  it('gives items back by rank, equal ranks in order of adding, between pushes too', () => {
    // A fixed pseudo-random sequence (the Lehmer generator of MINSTD): ranks 0-9, many equal.
    let state = 7;
    const random = () => (state = (state * 48271) % 2147483647) % 10;
    const queue = new RankedQueue<number>();
    const expected: { item: number; rank: number }[] = [];
    const taken: number[] = [];
    const wanted: number[] = [];
    for (let item = 0; item < 600; item++) {
      const rank = random();
      queue.push(item, rank);
      expected.push({ item, rank });
      if (item % 3 === 2) {
        // Take one out now and then: the least of what is in, the earliest added of its rank.
        expected.sort((a, b) => a.rank - b.rank || a.item - b.item);
        wanted.push(expected.shift()!.item);
        taken.push(queue.pop()!);
      }
    }
    expected.sort((a, b) => a.rank - b.rank || a.item - b.item);
    assert.equal(queue.size, expected.length);
    for (let item = queue.pop(); item !== undefined; item = queue.pop()) taken.push(item);
    assert.deepEqual(taken, [...wanted, ...expected.map((e) => e.item)]);
    assert.equal(queue.size, 0);
    assert.equal(queue.pop(), undefined);
  });
});
