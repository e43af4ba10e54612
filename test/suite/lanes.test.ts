// How `npm test` shares the test files among its lanes (scripts/test/lanes.ts): every file runs in
// exactly one lane, the files that share the machine (the real node and the browsers, the builds into
// the repository) all in the same one, and the lanes' work differs by no more than the largest share handed out.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { planLanes, specFiles, TOGETHER, togetherGroups } from '../../scripts/test/lanes.js';

const ROOT = path.resolve(import.meta.dirname, '..', '..');
const settings = JSON.parse(readFileSync(path.join(ROOT, '.mocharc.json'), 'utf8')) as { spec: string[] };
const files = specFiles(settings.spec);
const text = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');

describe("npm test's lanes", () => {
  it("runs the browsers in the real node's lane, and a file of two groups in one lane", () => {
    const plan = planLanes(files, 2, new Map());
    const laneOf = (file: string) => plan.findIndex((lane) => lane.includes(file));
    const realNode = laneOf('test/integration/real-node.test.ts');
    for (const browser of [
      'test/e2e/first-screen.test.ts',
      'test/e2e/data-bridge.test.ts',
      'test/e2e/landing-page.test.ts',
    ])
      assert.equal(laneOf(browser), realNode, browser);
    assert.equal(plan.flat().filter((f) => f === 'test/e2e/data-bridge.test.ts').length, 1);
  });

  it('finds every spec file of the mocha configuration, this one and the real-node suites among them', () => {
    assert.ok(files.includes('test/suite/lanes.test.ts'));
    assert.ok(files.includes('test/integration/real-node.test.ts'));
    assert.ok(files.includes('server/test/operator/placement.test.ts'));
    assert.equal(new Set(files).size, files.length);
  });

  for (const lanes of [1, 2, 3]) {
    it(`puts each file in one of ${lanes} lane(s), each group that shares the machine whole in one`, () => {
      const times = new Map(files.map((file, i) => [file, 1000 + ((i * 7919) % 50_000)]));
      const plan = planLanes(files, lanes, times);
      assert.equal(plan.length, lanes);
      assert.deepEqual(plan.flat().sort(), [...files].sort());
      for (const pattern of TOGETHER) {
        const group = files.filter((file) => pattern.test(text(file)));
        assert.ok(group.length >= 2, `${pattern} names a group of files`);
        const holding = plan.filter((lane) => group.some((file) => lane.includes(file)));
        assert.equal(holding.length, 1, `${pattern}: in ${holding.length} lanes`);
        assert.ok(group.every((file) => holding[0]!.includes(file)));
      }
      const loads = plan.map((lane) => lane.reduce((sum, file) => sum + times.get(file)!, 0));
      const largestShare = Math.max(
        ...files.map((file) => times.get(file)!),
        ...togetherGroups(files, text).map((group) => group.reduce((sum, file) => sum + times.get(file)!, 0)),
      );
      assert.ok(Math.max(...loads) - Math.min(...loads) <= largestShare, `loads ${loads.join(', ')}`);
    });
  }
});
