// Entry point: activate only wires the collaborators together; everything it creates lands on
// context.subscriptions and is disposed by VS Code.
import * as vscode from 'vscode';
import { DataBridge } from './bridge.js';
import { readBridgeConfig } from './config.js';

export function activate(context: vscode.ExtensionContext): void {
  const channel = vscode.window.createOutputChannel('Data Bridge', { log: true });
  context.subscriptions.push(channel);
  const bridge = new DataBridge({
    config: readBridgeConfig(process.env),
    secrets: context.secrets,
    logger: channel,
    registerCommand: (id, handler) => vscode.commands.registerCommand(id, handler),
  });
  context.subscriptions.push(bridge);
  // Not awaited: binding may wait for a port still held by the extension host of a reloaded window.
  void bridge.start();
}

export function deactivate(): void {
  // Nothing to do: the bridge and the output channel are on context.subscriptions.
}
