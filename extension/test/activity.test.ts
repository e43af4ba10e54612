// What the IDE reports as the student's activity, against a real bridge server on loopback: a person's
// edit of a file reaches the bridge; an extension writing to its output channel, git refreshing a
// virtual document or an extension moving a selection does not, or no session would ever be idle.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { ActivityWatcher, type IdeEvents } from '../src/activity.js';
import { SessionLifecycle } from '../src/lifecycle.js';
import { MemoryLogger } from '../src/logger.js';
import { BridgeServer } from '../src/server.js';
import { StopNoticeWatcher } from '../src/stop-notice.js';
import { EnvironmentStore } from '../src/store.js';
import { MemorySecretStorage } from './fakes.js';

const TOKEN = 'instance-token-activity-7d2e';

type Listeners = { [K in keyof IdeEvents]: Parameters<IdeEvents[K]>[0][] };

/** The IDE's events, fired by hand. */
class FakeIde implements IdeEvents {
  readonly listeners: Listeners = {
    onDidChangeTextDocument: [],
    onDidChangeActiveTextEditor: [],
    onDidChangeTextEditorSelection: [],
    onDidChangeWindowState: [],
  };
  onDidChangeTextDocument(listener: Listeners['onDidChangeTextDocument'][number]) {
    return this.add(this.listeners.onDidChangeTextDocument, listener);
  }
  onDidChangeActiveTextEditor(listener: Listeners['onDidChangeActiveTextEditor'][number]) {
    return this.add(this.listeners.onDidChangeActiveTextEditor, listener);
  }
  onDidChangeTextEditorSelection(listener: Listeners['onDidChangeTextEditorSelection'][number]) {
    return this.add(this.listeners.onDidChangeTextEditorSelection, listener);
  }
  onDidChangeWindowState(listener: Listeners['onDidChangeWindowState'][number]) {
    return this.add(this.listeners.onDidChangeWindowState, listener);
  }
  private add<T>(list: T[], listener: T) {
    list.push(listener);
    return { dispose: () => void list.splice(list.indexOf(listener), 1) };
  }
}

const doc = (uri: string) => ({ uri: { scheme: uri.slice(0, uri.indexOf(':')) } });
const edit = (uri: string) => ({ document: doc(uri), contentChanges: [{ text: 'x' }] });

describe('extension: what counts as the student’s activity', () => {
  let server: BridgeServer;
  let lifecycle: SessionLifecycle;
  let ide: FakeIde;
  let activity: ActivityWatcher;
  let reports: Promise<void>[];

  /** A fresh bridge, reporter and watcher: the reporter sends one report per interval at most. */
  async function start(): Promise<void> {
    const logger = new MemoryLogger();
    lifecycle = new SessionLifecycle(() => 1_000_000);
    server = new BridgeServer(new EnvironmentStore(new MemorySecretStorage(), logger), logger, {
      host: '127.0.0.1',
      port: 0,
      token: TOKEN,
      lifecycle,
    });
    const source = `http://127.0.0.1:${((await server.listen()) as AddressInfo).port}`;
    const notices = new StopNoticeWatcher({ source, token: TOKEN, logger, show: () => Promise.resolve(undefined) });
    ide = new FakeIde();
    reports = [];
    activity = new ActivityWatcher(ide, () => reports.push(notices.reportActivity()));
  }
  function stop(): void {
    activity.dispose();
    server.dispose();
  }
  beforeEach(start);
  afterEach(stop);

  async function reported(): Promise<boolean> {
    await Promise.all(reports);
    return lifecycle.secondsSinceActivity() !== null;
  }

  it('an extension writing to its output channel reports nothing', async () => {
    for (const listener of ide.listeners.onDidChangeTextDocument) {
      listener(edit('output:extension-output-ide-cloud.data-bridge-%231-Data%20Bridge'));
    }
    assert.equal(await reported(), false);
  });

  it('git refreshing its virtual documents, or an extension moving a selection, reports nothing', async () => {
    for (const listener of ide.listeners.onDidChangeTextDocument) listener(edit('git:/work/main.py?%7B%7D'));
    for (const listener of ide.listeners.onDidChangeActiveTextEditor) listener({ document: doc('output:channel') });
    for (const listener of ide.listeners.onDidChangeTextEditorSelection) {
      listener({ textEditor: { document: doc('file:///work/main.py') }, kind: undefined });
      listener({ textEditor: { document: doc('output:channel') }, kind: 2 });
    }
    for (const listener of ide.listeners.onDidChangeTextDocument) {
      listener({ document: doc('file:///work/main.py'), contentChanges: [] });
    }
    assert.equal(await reported(), false);
  });

  it('a person editing a file reports activity', async () => {
    for (const listener of ide.listeners.onDidChangeTextDocument) listener(edit('file:///work/main.py'));
    assert.equal(await reported(), true);
  });

  it('a new untitled file, the settings, a click in a file and the window gaining focus each report activity', async () => {
    const cases: (() => void)[] = [
      () => ide.listeners.onDidChangeTextDocument.forEach((l) => l(edit('untitled:Untitled-1'))),
      () =>
        ide.listeners.onDidChangeTextDocument.forEach((l) =>
          l(edit('vscode-userdata:/root/.local/share/code-server/User/settings.json')),
        ),
      () =>
        ide.listeners.onDidChangeTextEditorSelection.forEach((l) =>
          l({ textEditor: { document: doc('file:///work/main.py') }, kind: 2 }),
        ),
      () => ide.listeners.onDidChangeWindowState.forEach((l) => l({ focused: true })),
    ];
    for (const fire of cases) {
      stop();
      await start();
      fire();
      assert.equal(await reported(), true);
    }
  });
});
