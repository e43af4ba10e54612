// Entry point: activate only wires the collaborators together; everything it creates lands on
// context.subscriptions and is disposed by VS Code.
import * as vscode from 'vscode';
import { DataBridge } from './bridge.js';
import { ActivityWatcher } from './activity.js';
import { readBridgeConfig } from './config.js';
import { StopNoticeWatcher } from './stop-notice.js';

export function activate(context: vscode.ExtensionContext): void {
  const channel = vscode.window.createOutputChannel('Data Bridge', { log: true });
  context.subscriptions.push(channel);
  const config = readBridgeConfig(process.env);
  const bridge = new DataBridge({
    config,
    secrets: context.secrets,
    logger: channel,
    registerCommand: (id, handler) => vscode.commands.registerCommand(id, handler),
  });
  context.subscriptions.push(bridge);
  // Not awaited: binding may wait for a port still held by the extension host of a reloaded window.
  void bridge.start();

  if (config.enabled && !('error' in config)) {
    // The bridge on this host, whether its own process or served by this extension.
    const watcher = new StopNoticeWatcher({
      source: config.processUrl ?? `http://127.0.0.1:${config.port}`,
      token: config.token,
      show: (message, ...actions) => vscode.window.showWarningMessage(message, ...actions),
      logger: channel,
    });
    watcher.start();
    const activity = new ActivityWatcher(
      {
        onDidChangeTextDocument: (listener) => vscode.workspace.onDidChangeTextDocument(listener),
        onDidChangeActiveTextEditor: (listener) => vscode.window.onDidChangeActiveTextEditor(listener),
        onDidChangeTextEditorSelection: (listener) => vscode.window.onDidChangeTextEditorSelection(listener),
        onDidChangeWindowState: (listener) => vscode.window.onDidChangeWindowState(listener),
      },
      () => void watcher.reportActivity(),
    );
    context.subscriptions.push(watcher, activity);
  }
}

export function deactivate(): void {
  // Nothing to do: the bridge, the notice watcher and the output channel are on context.subscriptions.
}
