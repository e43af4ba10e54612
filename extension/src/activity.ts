// What counts as the student's activity in the IDE, the signal that keeps an idle session. Only what a
// person does: typing in a document a person edits, moving the cursor or changing editor there, the
// window gaining focus. Extensions write to output channels and git refreshes its virtual documents
// all the time; counting those would keep every session alive forever.
import type { Disposable } from './bridge.js';

/**
 * The URI schemes of documents a person edits, as the extension host sees them in code-server: its
 * server maps the workbench's `vscode-remote` URIs to `file` before they reach an extension, so
 * `vscode-remote` never arrives. `vscode-userdata` is the user's settings and keybindings,
 * `vscode-notebook-cell` a notebook's cells.
 */
export const PERSON_EDITED_SCHEMES: ReadonlySet<string> = new Set([
  'file',
  'untitled',
  'vscode-userdata',
  'vscode-notebook-cell',
]);

interface DocumentLike {
  readonly uri: { readonly scheme: string };
}

/** The parts of the IDE's events this reads (vscode.workspace and vscode.window), so tests can fire them. */
export interface IdeEvents {
  onDidChangeTextDocument(
    listener: (e: { readonly document: DocumentLike; readonly contentChanges: readonly unknown[] }) => void,
  ): Disposable;
  onDidChangeActiveTextEditor(listener: (editor: { readonly document: DocumentLike } | undefined) => void): Disposable;
  onDidChangeTextEditorSelection(
    listener: (e: {
      readonly textEditor: { readonly document: DocumentLike };
      readonly kind: number | undefined;
    }) => void,
  ): Disposable;
  onDidChangeWindowState(listener: (state: { readonly focused: boolean }) => void): Disposable;
}

function editedByPerson(document: DocumentLike): boolean {
  return PERSON_EDITED_SCHEMES.has(document.uri.scheme);
}

/** Calls `report` on each of the student's actions; the reporter throttles. */
export class ActivityWatcher {
  private readonly subscriptions: Disposable[];

  constructor(events: IdeEvents, report: () => void) {
    this.subscriptions = [
      events.onDidChangeTextDocument((e) => {
        // A save or a dirty-state change fires with no content change.
        if (e.contentChanges.length > 0 && editedByPerson(e.document)) report();
      }),
      events.onDidChangeActiveTextEditor((editor) => {
        if (editor && editedByPerson(editor.document)) report();
      }),
      events.onDidChangeTextEditorSelection((e) => {
        // No kind: an extension set the selection through the API, not a key, a click or a command.
        if (e.kind !== undefined && editedByPerson(e.textEditor.document)) report();
      }),
      events.onDidChangeWindowState((state) => {
        if (state.focused) report();
      }),
    ];
  }

  dispose(): void {
    for (const subscription of this.subscriptions) subscription.dispose();
  }
}
