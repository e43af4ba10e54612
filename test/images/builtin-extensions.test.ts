// The session image's built-in extensions (images/session-base/builtin-extensions.mjs), trimmed on a copy
// of the code-server the image installs (the same version as the tests' VS Code host): what cannot run
// in a session is gone, the JavaScript debugger keeps its Node.js launch types, and the install the copy
// links to is untouched. The real node's end-to-end suite checks the image itself; the VS Code host tests
// with `firstScreen` run the trimmed copy.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  EXTENSIONS_DIR,
  JS_DEBUG,
  JS_DEBUG_NODE_TYPES,
  JS_DEBUG_STRIPPED_TYPES,
  REMOVED,
  trimBuiltinExtensions,
  // @ts-expect-error: a build script of the image, plain JavaScript without types
} from '../../images/session-base/builtin-extensions.mjs';
import { installVscodeHost, linkedCopy } from '../support/vscode-host.js';

const trim = trimBuiltinExtensions as (codeServer: string) => Promise<number>;
const removed = REMOVED as string[];

interface Debugger {
  type: string;
  label: string;
  configurationAttributes: Record<string, unknown>;
  configurationSnippets: unknown[];
}
const debuggers = async (codeServer: string) =>
  (
    JSON.parse(await readFile(path.join(codeServer, EXTENSIONS_DIR, JS_DEBUG, 'package.json'), 'utf8')) as {
      contributes: { debuggers: Debugger[] };
    }
  ).contributes.debuggers;
/** The launch types with a launch.json schema. */
const withSchemas = async (codeServer: string) =>
  (await debuggers(codeServer)).filter((d) => Object.keys(d.configurationAttributes).length).map((d) => d.type);

describe('session image: the built-in extensions', function () {
  this.timeout(10 * 60_000);
  let dir: string;
  let original: string;
  let copies = 0;

  /** A copy of the install's code-server extensions, of hard links as the VS Code host's copies are. */
  async function copyOfInstall(): Promise<string> {
    const copy = path.join(dir, `code-server-${++copies}`);
    await linkedCopy(path.join(original, EXTENSIONS_DIR), path.join(copy, EXTENSIONS_DIR));
    return copy;
  }

  before(async () => {
    const install = await installVscodeHost();
    // The entry is <code-server>/out/node/entry.js.
    original = path.resolve(path.dirname(install.codeServerEntry), '..', '..');
    dir = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-builtins-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('removes what cannot run in a session; the JavaScript debugger keeps every type, schemas only for Node.js', async () => {
    const copy = await copyOfInstall();
    const before = await readdir(path.join(copy, EXTENSIONS_DIR));
    for (const name of removed) assert.ok(before.includes(name), `${name} is built in`);
    const types = (await debuggers(copy)).map((d) => d.type);
    assert.ok((await withSchemas(copy)).includes('pwa-chrome'));

    const saved = await trim(copy);
    assert.ok(saved > 150_000, `the debugger's manifest shrank by ${saved} characters`);
    const after = await readdir(path.join(copy, EXTENSIONS_DIR));
    assert.deepEqual(before.filter((name) => !after.includes(name)).sort(), [...removed].sort());
    // Every type it registers stays defined (a type and a label), or its activation would fail.
    const trimmed = await debuggers(copy);
    assert.deepEqual(
      trimmed.map((d) => d.type),
      types,
    );
    assert.ok(trimmed.every((d) => d.label));
    assert.deepEqual((await withSchemas(copy)).sort(), [...(JS_DEBUG_NODE_TYPES as string[])].sort());
    for (const d of trimmed.filter((d) => (JS_DEBUG_STRIPPED_TYPES as string[]).includes(d.type)))
      assert.deepEqual(d.configurationSnippets, [], d.type);
    // What a course uses stays: git, the language features, the debugger itself, the README's preview.
    for (const name of ['git', 'typescript-language-features', JS_DEBUG, 'markdown-language-features'])
      assert.ok(after.includes(name), name);

    // The install the copy links to keeps everything.
    for (const name of removed) assert.ok(existsSync(path.join(original, EXTENSIONS_DIR, name)), name);
    assert.ok((await withSchemas(original)).includes('pwa-chrome'), 'the linked manifest was not written through');
  });

  it('changes nothing on a code-server whose extensions it does not know, and names what it missed', async () => {
    const copy = await copyOfInstall();
    const manifestFile = path.join(copy, EXTENSIONS_DIR, JS_DEBUG, 'package.json');
    const manifest = JSON.parse(await readFile(manifestFile, 'utf8')) as { contributes: { debuggers: Debugger[] } };
    manifest.contributes.debuggers = manifest.contributes.debuggers.map((d) =>
      d.type === 'msedge' ? { ...d, type: 'firefox' } : d,
    );
    await rm(manifestFile); // never through a link to the install
    await writeFile(manifestFile, JSON.stringify(manifest));
    await assert.rejects(trim(copy), /launch types are not the expected ones \(unknown: firefox; missing: msedge\)/);
    for (const name of removed) assert.ok(existsSync(path.join(copy, EXTENSIONS_DIR, name)), `${name} left`);

    await rm(path.join(copy, EXTENSIONS_DIR, 'tunnel-forwarding'), { recursive: true });
    await assert.rejects(trim(copy), /no tunnel-forwarding \(another code-server version\?\)/);
    assert.ok(existsSync(path.join(copy, EXTENSIONS_DIR, 'copilot')), 'nothing removed');
  });
});
