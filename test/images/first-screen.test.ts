// The session image's first-screen script (images/session-base/first-screen.mjs), run as the Dockerfile
// and the entrypoint run it, on a stand-in for code-server's workbench page; and the wiring: the image
// runs it for its WORKSPACE_DIR and keeps workspace trust on. What the page then does in a browser is
// test/e2e/first-screen.test.ts's part.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DockerfileParser } from 'dockerfile-ast';

const run = promisify(execFile);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SCRIPT = path.join(root, 'images/session-base/first-screen.mjs');
const PAGE = 'lib/vscode/out/vs/code/browser/workbench/workbench.html';
const WORKBENCH_TAG =
  '<script type="module" src="{{WORKBENCH_WEB_BASE_URL}}/out/vs/code/browser/workbench/workbench.js"></script>';
// code-server 4.139.1's page, shortened to what the script works on.
const ORIGINAL = `<!DOCTYPE html>
<html>
	<head><script nonce="{{WORKBENCH_SCRIPT_NONCE}}">performance.mark('code/didStartRenderer');</script></head>
	<body aria-label=""></body>
	<script nonce="{{WORKBENCH_SCRIPT_NONCE}}">globalThis._VSCODE_FILE_ROOT = baseUrl + '/out/';</script>
	<script type="module" src="{{WORKBENCH_NLS_URL}}"></script>
	${WORKBENCH_TAG}
</html>`;

describe('the first-screen script of the session image', () => {
  let dir: string;
  let codeServer: string;
  let userData: string;
  const page = () => readFile(path.join(codeServer, PAGE), 'utf8');
  const prepare = (folder: string, ...extra: string[]) =>
    run(process.execPath, [SCRIPT, '--code-server', codeServer, '--work-folder', folder, ...extra]);

  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'ide-cloud-first-screen-'));
    codeServer = path.join(dir, 'code-server');
    userData = path.join(dir, 'user-data');
    await mkdir(path.dirname(path.join(codeServer, PAGE)), { recursive: true });
    await writeFile(path.join(codeServer, PAGE), ORIGINAL);
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it('starts the workbench from a nonce’d module that first trusts the baked-in work folder', async () => {
    await prepare('/home/ide/workspace');
    const html = await page();
    assert.ok(!html.includes(WORKBENCH_TAG), 'workbench.js no longer starts on its own');
    const modules = [
      ...html.matchAll(/<script type="module" nonce="\{\{WORKBENCH_SCRIPT_NONCE\}\}">([\s\S]*?)<\/script>/g),
    ];
    assert.equal(modules.length, 1, html);
    const body = modules[0]![1]!;
    assert.match(body, /const WORK_FOLDER = "\/home\/ide\/workspace";/);
    assert.match(body, /indexedDB\.open\('vscode-web-state-db-global-shared'\)/);
    assert.match(body, /'content\.trust\.model\.key'/);
    // The seeding is awaited before the workbench is imported, and the trusted folder never comes from the URL.
    assert.ok(body.indexOf('await Promise.race([trustWorkFolder()') < body.indexOf('await import('));
    const seeding = body.slice(body.indexOf('async function trustWorkFolder()'), body.indexOf('await Promise.race('));
    assert.match(seeding, /path: WORK_FOLDER/);
    assert.doesNotMatch(seeding, /location\.(search|href|pathname)|URLSearchParams|query/);
    // The address gets the work folder, unless it names a folder, a workspace or the empty window, before the import.
    assert.match(body, /if \(!query\.get\('folder'\) && !query\.get\('workspace'\) && !query\.has\('ew'\)\)/);
    assert.ok(body.indexOf('history.replaceState(') < body.indexOf('await import('));
    // Everything else of the page as it was.
    assert.equal(
      html.replace(/<!-- ide-cloud: trust the work folder -->[\s\S]*<!-- \/ide-cloud -->/, WORKBENCH_TAG),
      ORIGINAL,
    );
  });

  it('changes nothing when run again for the same folder, and moves the trust to another folder', async () => {
    const first = await prepare('/home/ide/workspace', '--user-data-dir', userData);
    assert.match(first.stdout, /wrote .*workbench\.html, .*settings\.json/);
    const again = await prepare('/home/ide/workspace', '--user-data-dir', userData);
    assert.match(again.stdout, /nothing to change/);

    await prepare('/srv/course');
    const html = await page();
    assert.equal(html.split('ide-cloud: trust the work folder').length - 1, 1, 'one seeding block');
    assert.match(html, /const WORK_FOLDER = "\/srv\/course";/);
    assert.doesNotMatch(html, /\/home\/ide\/workspace/);
  });

  it('keeps a folder name from closing the script or reaching code-server’s template', async () => {
    await prepare('/home/ide/</script>{{WORKBENCH_NLS_URL}}');
    const html = await page();
    assert.equal(html.split('</script>').length, ORIGINAL.split('</script>').length);
    assert.equal(html.split('{{WORKBENCH_NLS_URL}}').length, 2, 'only the page’s own placeholder');
  });

  it('writes the machine settings over what is there, leaving the other settings', async () => {
    await mkdir(path.join(userData, 'Machine'), { recursive: true });
    await writeFile(
      path.join(userData, 'Machine', 'settings.json'),
      JSON.stringify({ 'editor.fontSize': 15, 'chat.disableAIFeatures': false }),
    );
    await prepare('/home/ide/workspace', '--user-data-dir', userData);
    assert.deepEqual(JSON.parse(await readFile(path.join(userData, 'Machine', 'settings.json'), 'utf8')), {
      'editor.fontSize': 15,
      'chat.disableAIFeatures': true,
      'workbench.startupEditor': 'none',
      'workbench.secondarySideBar.defaultVisibility': 'hidden',
    });
  });

  it('refuses a page it does not know and a folder that is not a clean absolute path', async () => {
    await writeFile(path.join(codeServer, PAGE), ORIGINAL.replace(WORKBENCH_TAG, '<script src="other.js"></script>'));
    await assert.rejects(
      prepare('/home/ide/workspace'),
      /expected the workbench\.js script tag once, found it 0 times/,
    );
    await writeFile(path.join(codeServer, PAGE), ORIGINAL);
    for (const folder of ['workspace', '/', '/home/ide/../workspace', '']) {
      await assert.rejects(prepare(folder), /--work-folder|usage/, folder);
    }
    assert.equal(await page(), ORIGINAL);
  });
});

describe('the session image keeps workspace trust on and prepares the first screen', () => {
  const read = (file: string) => readFile(path.join(root, file), 'utf8');

  it('runs the script at build for its WORKSPACE_DIR, as root, before the IDE user takes over', async () => {
    const instructions = DockerfileParser.parse(await read('images/session-base/Dockerfile')).getInstructions();
    const last = instructions.map((i) => i.getKeyword()).lastIndexOf('FROM');
    const final = instructions.slice(last).map((i) => ({ keyword: i.getKeyword(), text: i.getTextContent() }));
    const env = final.findIndex((i) => i.keyword === 'ENV' && /WORKSPACE_DIR=/.test(i.text));
    const script = final.findIndex(
      (i) => i.keyword === 'RUN' && /node \/opt\/ide-cloud\/first-screen\.mjs /.test(i.text),
    );
    const user = final.findIndex((i) => i.keyword === 'USER');
    assert.ok(env >= 0 && env < script && script < user, JSON.stringify(final.map((i) => i.keyword)));
    const runText = final[script]!.text;
    assert.match(runText, /--work-folder "\$WORKSPACE_DIR"/);
    assert.match(runText, /--code-server \/usr\/local\/lib\/node_modules\/code-server /);
    assert.match(runText, /--user-data-dir \/home\/ide\/\.local\/share\/code-server/);
    assert.ok(
      final.some(
        (i) =>
          i.keyword === 'COPY' &&
          /^COPY (\S+ )*images\/session-base\/first-screen\.mjs (\S+ )*\/opt\/ide-cloud\/$/.test(i.text),
      ),
    );
  });

  it('never turns workspace trust off', async () => {
    for (const file of [
      'images/session-base/Dockerfile',
      'images/session-base/entrypoint.sh',
      'images/session-base/first-screen.mjs',
    ]) {
      const text = await read(file);
      assert.doesNotMatch(text, /--disable-workspace-trust/, file);
      assert.doesNotMatch(text, /security\.workspace\.trust\.enabled/, file);
    }
  });
});
