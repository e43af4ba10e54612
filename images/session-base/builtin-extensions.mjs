// The built-in extensions of code-server as a session image ships them: what can never run in a session
// goes, at image build. Every student's page load has the IDE server scan the built-in extensions and
// send every manifest to the browser, whose main thread reads them and registers what they contribute
// while the workbench starts, before the explorer shows the files.
//
// - Gone: the AI chat (the machine settings turn AI features off, first-screen.mjs), the sign-in to
//   Microsoft accounts and the forwarding over VS Code's tunnels (both need Microsoft's services, which
//   code-server does not have), and the JavaScript debugger's companion (it starts a browser on the
//   desktop beside a remote window; here the browser is the window).
// - The JavaScript debugger keeps every launch type it registers (its activation fails on a type its
//   manifest lacks), but those that cannot start inside a session's pod, a browser's (Chrome, Edge, the
//   editor's own) and an extension host's, lose their launch.json schemas and snippets: three quarters
//   of the largest manifest (about 220 of 310 KB). Their configurations are not offered or completed.
//
//   node builtin-extensions.mjs <code-server directory>
//
// Written for one code-server version: the build fails, naming what moved, when an extension or a
// launch type it expects is not there.
import console from 'node:console';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

export const EXTENSIONS_DIR = 'lib/vscode/extensions';
export const REMOVED = ['copilot', 'microsoft-authentication', 'tunnel-forwarding', 'ms-vscode.js-debug-companion'];
export const JS_DEBUG = 'ms-vscode.js-debug';
/** The debugger's launch types that run in a session: Node.js, in a terminal or not. */
export const JS_DEBUG_NODE_TYPES = ['pwa-node', 'node', 'node-terminal'];
/** Those that cannot: a browser of the student's desktop, or an extension host. */
export const JS_DEBUG_STRIPPED_TYPES = [
  'pwa-extensionHost',
  'extensionHost',
  'pwa-chrome',
  'chrome',
  'pwa-msedge',
  'msedge',
  'pwa-editor-browser',
  'editor-browser',
];

/** Removes what cannot run in a session from `codeServer`'s built-in extensions; returns the characters of manifest saved. */
export async function trimBuiltinExtensions(codeServer) {
  const dir = path.join(codeServer, EXTENSIONS_DIR);
  // Everything checked before anything changes: an unexpected code-server is left whole.
  const gone = REMOVED.filter((name) => !existsSync(path.join(dir, name)));
  if (gone.length) throw new Error(`${dir}: no ${gone.join(', ')} (another code-server version?)`);
  const manifestFile = path.join(dir, JS_DEBUG, 'package.json');
  const text = await readFile(manifestFile, 'utf8');
  const manifest = JSON.parse(text);
  const debuggers = manifest.contributes?.debuggers ?? [];
  const types = debuggers.map((d) => d.type);
  const expected = [...JS_DEBUG_NODE_TYPES, ...JS_DEBUG_STRIPPED_TYPES];
  const unknown = types.filter((t) => !expected.includes(t));
  const missing = expected.filter((t) => !types.includes(t));
  if (unknown.length || missing.length)
    throw new Error(
      `${manifestFile}: the launch types are not the expected ones (unknown: ${unknown.join(', ') || 'none'}; missing: ${missing.join(', ') || 'none'})`,
    );

  for (const name of REMOVED) await rm(path.join(dir, name), { recursive: true });
  for (const debug of debuggers) {
    if (!JS_DEBUG_STRIPPED_TYPES.includes(debug.type)) continue;
    debug.configurationAttributes = {};
    debug.configurationSnippets = [];
  }
  const trimmed = JSON.stringify(manifest);
  // A new file, not a write through an existing one: a copy of code-server made of hard links keeps
  // the original's manifest.
  await rm(manifestFile);
  await writeFile(manifestFile, trimmed);
  return text.length - trimmed.length;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const [codeServer] = process.argv.slice(2);
  if (!codeServer) {
    console.error('usage: node builtin-extensions.mjs <code-server directory>');
    process.exit(2);
  }
  const saved = await trimBuiltinExtensions(codeServer);
  console.log(`removed ${REMOVED.join(', ')}; ${JS_DEBUG}'s manifest ${Math.round(saved / 1024)} KiB smaller`);
}
