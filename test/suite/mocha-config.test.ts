// The suite's own settings: a stray `.only` or a skipped test fails the run (CI included) instead of
// quietly running less. The forbid settings of each mocha configuration are applied to a fixture with
// a skipped test and to one with `.only`: mocha must fail both.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const root = path.resolve(import.meta.dirname, '..', '..');
const run = promisify(execFile);

describe("the suite's mocha settings", function () {
  this.timeout(60_000);

  for (const config of ['.mocharc.json', '.mocharc.unit.json']) {
    it(`${config} fails a run with a skipped test or an .only`, async () => {
      const settings = JSON.parse(await readFile(path.join(root, config), 'utf8')) as Record<string, unknown>;
      assert.equal(settings['forbid-only'], true);
      assert.equal(settings['forbid-pending'], true);
      const dir = await mkdtemp(path.join(os.tmpdir(), 'mocha-config-'));
      try {
        const rc = path.join(dir, 'rc.json');
        await writeFile(
          rc,
          JSON.stringify({ 'forbid-only': settings['forbid-only'], 'forbid-pending': settings['forbid-pending'] }),
        );
        const fixtures = {
          'skipped.test.cjs': "describe('f', () => { it.skip('skipped', () => {}); it('runs', () => {}); });",
          'only.test.cjs': "describe('f', () => { it.only('only', () => {}); it('other', () => {}); });",
        };
        for (const [name, text] of Object.entries(fixtures)) {
          await writeFile(path.join(dir, name), text);
          const mocha = path.join(root, 'node_modules', 'mocha', 'bin', 'mocha.js');
          const result = await run(process.execPath, [mocha, '--config', rc, path.join(dir, name)]).then(
            () => 'passed',
            (error: { code?: number; stdout?: string }) => `failed (${error.code}): ${error.stdout ?? ''}`,
          );
          assert.match(result, /^failed/, `${name} must fail the run: ${result}`);
        }
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }
});
