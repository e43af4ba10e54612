// The VS Code front: wires the core to the IDE. dataBridge.getEnv is the bridge extension's command;
// SESSION_ENV_STRATEGY (read by the core) decides whether it is used. Activation only wires; the
// bootstrap runs in the background so the IDE never waits for a clone.
import * as vscode from 'vscode';
import { SessionSetup, type SetupState, type SetupUi } from './session-setup.js';

const ICONS: Record<SetupState, string> = {
  waiting: '$(sync~spin)',
  cloning: '$(sync~spin)',
  ready: '$(check)',
  failed: '$(error)',
  idle: '$(info)',
};

export function activate(context: vscode.ExtensionContext): void {
  // A log channel: timestamps and levels, and a file under the logs folder that support can collect.
  const output = vscode.window.createOutputChannel('IDE Cloud Agent', { log: true });
  const status = vscode.window.createStatusBarItem('ideCloudAgent.status', vscode.StatusBarAlignment.Left, 100);
  status.name = 'IDE Cloud session setup';
  status.command = 'ideCloudAgent.showLog';

  const ui: SetupUi = {
    appendLine: (line) => (line.startsWith('error:') ? output.error(line) : output.info(line)),
    showState(state, detail) {
      status.text = `${ICONS[state]} ${state === 'ready' ? 'Session ready' : state === 'failed' ? 'Setup failed' : detail}`;
      status.tooltip = detail;
      status.show();
    },
    showError: (message, ...actions) => Promise.resolve(vscode.window.showErrorMessage(message, ...actions)),
    showInfo: (message) => void vscode.window.showInformationMessage(message),
    ask: (prompt, value) => Promise.resolve(vscode.window.showInputBox({ prompt, value, ignoreFocusOut: true })),
    showLog: () => output.show(true),
    async showReadme(file) {
      const uri = vscode.Uri.file(file);
      // The built-in markdown extension's rendered preview; any other README as text.
      if (/\.(md|markdown)$/i.test(file)) await vscode.commands.executeCommand('markdown.showPreview', uri);
      else await vscode.window.showTextDocument(uri, { preview: false });
    },
  };

  const setup = new SessionSetup({
    ui,
    env: process.env,
    getEnv: async (keys) => vscode.commands.executeCommand<Record<string, unknown>>('dataBridge.getEnv', keys),
    workspaceDir: () => vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
    memory: context.workspaceState,
  });

  context.subscriptions.push(
    output,
    status,
    setup,
    vscode.commands.registerCommand('ideCloudAgent.bootstrap', () => setup.bootstrap()),
    vscode.commands.registerCommand('ideCloudAgent.cloneParticipation', () => setup.cloneParticipation()),
    vscode.commands.registerCommand('ideCloudAgent.showLog', () => output.show(true)),
  );
  void setup.bootstrap();
}

export function deactivate(): void {}
