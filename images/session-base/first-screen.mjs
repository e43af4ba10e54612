#!/usr/bin/env node
// The student's first screen in a session IDE. Run at image build with the image's WORKSPACE_DIR, again
// by the entrypoint at each start with the WORKSPACE_DIR the operator gave (an app definition may move
// the work folder; nothing is written when nothing changes), and by the host tests on their own copy of
// code-server, so all three run exactly this:
//
// 1. Workspace trust stays on, but the work folder the platform chose is trusted from the first load.
//    VS Code has no setting for that: the web workbench reads the trusted folders from the key
//    `content.trust.model.key` of its application-shared storage (scope -2), the IndexedDB database
//    `vscode-web-state-db-global-shared` (object store `ItemTable`, values are JSON strings) of the IDE's
//    origin. workbench.html gets a small inline module (nonce'd like code-server's own scripts, so the
//    page's CSP admits it) that adds the work folder's entry there, keeping every stored entry, and only
//    then imports workbench.js. The trusted folder is baked in here, never read from the page URL:
//    `?folder=` is the student's to choose, and anything opened that way stays restricted.
//    The same module puts the work folder in the address when the address names none: the workbench
//    reads the folder to open from there, so code-server is given no folder (the entrypoint) and makes
//    no redirect to `?folder=` on the session URL (a round trip through the ingress and the proxy).
// 2. Machine settings (the `Machine/settings.json` code-server reads as the remote machine's): no
//    Welcome page (the agent extension opens the repository's README instead) and no AI features the
//    app definition did not ask for. The student's own User settings stay theirs.
//
// Usage: node first-screen.mjs --code-server <code-server package dir> --work-folder <abs path>
//                              [--user-data-dir <code-server user data dir>]
import console from 'node:console';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import process from 'node:process';
import { parseArgs } from 'node:util';

/** The page code-server renders as the workbench, relative to its package directory. */
export const WORKBENCH_HTML = 'lib/vscode/out/vs/code/browser/workbench/workbench.html';

/** What the machine level sets, whatever the student's own settings say later. */
export const MACHINE_SETTINGS = {
  'workbench.startupEditor': 'none',
  'chat.disableAIFeatures': true,
  // The secondary side bar holds the chat by default: with it off, it would open empty.
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
};

const WORKBENCH_SCRIPT =
  '<script type="module" src="{{WORKBENCH_WEB_BASE_URL}}/out/vs/code/browser/workbench/workbench.js"></script>';
export const BEGIN = '<!-- ide-cloud: trust the work folder -->';
const END = '<!-- /ide-cloud -->';

/** The inline module that trusts `workFolder` and then starts the workbench. */
export function trustScript(workFolder) {
  // JSON is a JS literal; `<` escaped so no value can close the script element, `{` so code-server's
  // template ({{NAME}}) leaves it alone.
  const folder = JSON.stringify(workFolder).replace(/</g, '\\u003c').replace(/\{/g, '\\u007b');
  return `${BEGIN}
	<script type="module" nonce="{{WORKBENCH_SCRIPT_NONCE}}">
		// Adds the work folder to the trusted folders before workbench.js reads them; see
		// images/session-base/first-screen.mjs. Never blocks the workbench: on any failure it starts untrusted.
		const WORK_FOLDER = ${folder};
		// The session's URL names no folder: the work folder goes in the address, where the workbench
		// reads the folder to open. An address that names a folder, a workspace or the empty window (?ew)
		// keeps it.
		try {
			const query = new URLSearchParams(location.search);
			if (!query.get('folder') && !query.get('workspace') && !query.has('ew')) {
				query.delete('folder');
				query.delete('workspace');
				const rest = query.toString();
				const address = new URL(location.href);
				address.search = '?folder=' + encodeURIComponent(WORK_FOLDER).replace(/%2F/g, '/') + (rest && '&' + rest);
				history.replaceState(history.state, '', address);
			}
		} catch (error) {
			console.error('ide-cloud: could not put the work folder in the address', error);
		}
		const KEY = 'content.trust.model.key';
		const STORE = 'ItemTable';
		const request = (r) => new Promise((resolve, reject) => {
			r.onsuccess = () => resolve(r.result);
			r.onerror = () => reject(r.error);
		});
		async function trustWorkFolder() {
			const open = indexedDB.open('vscode-web-state-db-global-shared');
			// As VS Code creates it, when this is the origin's first visit.
			open.onupgradeneeded = () => open.result.objectStoreNames.contains(STORE) || open.result.createObjectStore(STORE);
			const db = await request(open);
			try {
				if (!db.objectStoreNames.contains(STORE)) return;
				const tx = db.transaction(STORE, 'readwrite');
				const store = tx.objectStore(STORE);
				const get = store.get(KEY);
				// Read and write in one transaction, the write from the read's own callback.
				get.onsuccess = () => {
					let info;
					try {
						info = JSON.parse(get.result);
					} catch {}
					if (!info || typeof info !== 'object' || Array.isArray(info)) info = {};
					const entries = Array.isArray(info.uriTrustInfo) ? info.uriTrustInfo : [];
					// The workbench's remote authority is the page's host (code-server's workbench.js sets it so).
					const uri = { $mid: 1, scheme: 'vscode-remote', authority: location.host, path: WORK_FOLDER };
					const same = (e) => e?.uri?.scheme === uri.scheme && e.uri.authority === uri.authority && e.uri.path === uri.path;
					if (entries.some((e) => same(e) && e.trusted === true)) return;
					info.uriTrustInfo = [...entries.filter((e) => !same(e)), { uri, trusted: true }];
					store.put(JSON.stringify(info), KEY);
				};
				await new Promise((resolve, reject) => {
					tx.oncomplete = resolve;
					tx.onabort = tx.onerror = () => reject(tx.error);
				});
			} finally {
				db.close();
			}
		}
		try {
			// A database held by a stuck tab must not keep the IDE from starting.
			await Promise.race([trustWorkFolder(), new Promise((_, reject) => setTimeout(() => reject(new Error('timed out')), 5000))]);
		} catch (error) {
			console.error('ide-cloud: could not trust the work folder', error);
		}
		// The page's own startup script set the file root (an absolute URL) just above.
		await import(globalThis._VSCODE_FILE_ROOT + 'vs/code/browser/workbench/workbench.js');
	</script>
	${END}`;
}

/** workbench.html with the trust module in place of the workbench.js tag; again on a patched page replaces it. */
export function patchWorkbenchHtml(html, workFolder) {
  const begin = html.indexOf(BEGIN);
  const original =
    begin === -1 ? html : html.slice(0, begin) + WORKBENCH_SCRIPT + html.slice(html.indexOf(END) + END.length);
  const found = original.split(WORKBENCH_SCRIPT).length - 1;
  // Another code-server may load the workbench differently: fail the build rather than ship it untrusted.
  if (found !== 1)
    throw new Error(`${WORKBENCH_HTML}: expected the workbench.js script tag once, found it ${found} times`);
  return original.replace(WORKBENCH_SCRIPT, () => trustScript(workFolder));
}

function checkFolder(folder) {
  if (!folder || !path.posix.isAbsolute(folder) || path.posix.normalize(folder) !== folder || folder === '/')
    throw new Error(`--work-folder must be a normalized absolute path other than /, not ${JSON.stringify(folder)}`);
  return folder.replace(/\/+$/, '');
}

/** Writes `text` unless the file holds it already; true when it wrote. */
async function writeIfChanged(file, text, current) {
  if (current === text) return false;
  await writeFile(file, text);
  return true;
}

/** Prepares the page and (with userDataDir) the machine settings; returns what it changed. */
export async function prepareFirstScreen({ codeServer, workFolder, userDataDir }) {
  const folder = checkFolder(workFolder);
  const changed = [];
  const page = path.join(codeServer, WORKBENCH_HTML);
  const html = await readFile(page, 'utf8');
  if (await writeIfChanged(page, patchWorkbenchHtml(html, folder), html)) changed.push(page);
  if (userDataDir) {
    const file = path.join(userDataDir, 'Machine', 'settings.json');
    await mkdir(path.dirname(file), { recursive: true });
    const text = await readFile(file, 'utf8').catch((error) => {
      if (error.code === 'ENOENT') return undefined;
      throw error;
    });
    const settings = { ...(text === undefined ? {} : JSON.parse(text)), ...MACHINE_SETTINGS };
    if (await writeIfChanged(file, `${JSON.stringify(settings, null, 2)}\n`, text)) changed.push(file);
  }
  return changed;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      'code-server': { type: 'string' },
      'work-folder': { type: 'string' },
      'user-data-dir': { type: 'string' },
    },
  });
  if (!values['code-server'] || !values['work-folder']) {
    console.error('usage: first-screen.mjs --code-server <dir> --work-folder <abs path> [--user-data-dir <dir>]');
    process.exit(2);
  }
  const changed = await prepareFirstScreen({
    codeServer: values['code-server'],
    workFolder: values['work-folder'],
    userDataDir: values['user-data-dir'],
  });
  const wrote = changed.length ? `wrote ${changed.join(', ')}` : 'nothing to change';
  console.log(`ide-cloud: first screen for ${values['work-folder']}: ${wrote}`);
}
