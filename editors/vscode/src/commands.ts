/**
 * "Read Many Files: Copy to Clipboard" and "Read Many Files: Open in Editor": read what
 * the person typed (globs, folders, paths) or selected in the Explorer, then put the
 * answer's `llmContent` on the clipboard or in a new untitled editor.
 */
import * as path from 'path';
import type * as vscode from 'vscode';
import type { Format, ReadManyParams, ReadManyResult } from './protocol';
import { describeError } from './tool';

/** Split what the person typed into entries: whitespace separates them, double or single
 * quotes keep spaces inside one (`"my notes/*.md" src/`). Commas are kept (`{a,b}`). */
export function splitPatterns(text: string): string[] {
  const out: string[] = [];
  const re = /"([^"]*)"|'([^']*)'|(\S+)/g;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    const value = m[1] ?? m[2] ?? m[3] ?? '';
    if (value !== '') out.push(value);
  }
  return out;
}

export interface UriLike {
  fsPath: string;
  toString(): string;
}

export interface FolderLike {
  name: string;
  uri: UriLike;
}

/** One `readMany/read` per workspace folder the selection touches. */
export interface ReadGroup {
  /** absolute path of the root; undefined: the server's first workspace folder */
  root?: string;
  paths: string[];
}

function toPosix(p: string): string {
  return p.split(path.sep).join('/');
}

/** Explorer selection → read groups: each URI relative to its workspace folder (the
 * folder itself is `.`); a URI outside every folder is read from its parent folder. */
export function selectionToGroups(
  uris: readonly UriLike[],
  folderOf: (uri: UriLike) => FolderLike | undefined,
): ReadGroup[] {
  const groups = new Map<string, ReadGroup>();
  for (const uri of uris) {
    const folder = folderOf(uri);
    let root: string;
    let rel: string;
    if (folder) {
      root = folder.uri.fsPath;
      rel = toPosix(path.relative(root, uri.fsPath)) || '.';
    } else {
      root = path.dirname(uri.fsPath);
      rel = path.basename(uri.fsPath);
    }
    const group = groups.get(root) ?? { root, paths: [] };
    if (!group.paths.includes(rel)) group.paths.push(rel);
    groups.set(root, group);
  }
  return [...groups.values()];
}

/** The arguments VS Code passes a command: (clicked, selection) from the Explorer,
 * (uri, other) from an editor tab, nothing from the Command Palette. */
export function selectedUris(clicked: unknown, selection: unknown): UriLike[] {
  const isUri = (u: unknown): u is UriLike => typeof u === 'object' && u !== null && typeof (u as UriLike).fsPath === 'string';
  if (Array.isArray(selection) && selection.length > 0 && selection.every(isUri)) return selection;
  return isUri(clicked) ? [clicked] : [];
}

export function languageForFormat(format: Format | undefined): string {
  switch (format) {
    case 'xml':
      return 'xml';
    case 'json':
      return 'json';
    default:
      return 'plaintext';
  }
}

const number = new Intl.NumberFormat('en-US');

/** "12 files, 34,567 chars (~8,642 tokens); 30 omitted by the budget; 1 error" */
export function summarize(results: readonly ReadManyResult[]): { text: string; omitted: number; attachments: number } {
  let read = 0;
  let chars = 0;
  let tokens = 0;
  let omitted = 0;
  let errors = 0;
  let skipped = 0;
  let attachments = 0;
  for (const r of results) {
    read += r.summary.read;
    chars += r.summary.totalChars;
    tokens += r.summary.estimatedTokens;
    omitted += r.summary.omitted;
    errors += r.summary.errors;
    skipped += r.summary.skipped;
    attachments += r.attachments?.length ?? 0;
  }
  let text = `${number.format(read)} file${read === 1 ? '' : 's'}, ${number.format(chars)} chars (~${number.format(tokens)} tokens)`;
  if (omitted) text += `; ${number.format(omitted)} omitted by the budget`;
  if (skipped) text += `; ${number.format(skipped)} skipped`;
  if (errors) text += `; ${number.format(errors)} error${errors === 1 ? '' : 's'}`;
  if (attachments) text += `; ${attachments} image/PDF attachment${attachments === 1 ? '' : 's'} not included as text`;
  return { text, omitted, attachments };
}

export type CommandApi = {
  window: Pick<typeof vscode.window, 'showInputBox' | 'showTextDocument' | 'showInformationMessage' | 'showWarningMessage' | 'showErrorMessage' | 'setStatusBarMessage' | 'withProgress'>;
  workspace: Pick<typeof vscode.workspace, 'openTextDocument' | 'getWorkspaceFolder'>;
  env: { clipboard: Pick<vscode.Clipboard, 'writeText'> };
  commands: Pick<typeof vscode.commands, 'executeCommand'>;
  ProgressLocation: typeof vscode.ProgressLocation;
};

export interface CommandDeps {
  read(params: ReadManyParams): Promise<ReadManyResult>;
  /** the format the answers come in (readmany.read.format), for the editor language */
  format(): Format;
  showOutput(): void;
}

export type Destination = 'clipboard' | 'editor';

export class ReadCommands {
  private lastInput = '';

  constructor(
    private readonly api: CommandApi,
    private readonly deps: CommandDeps,
  ) {}

  /** The groups to read: the Explorer selection, else what the person types. */
  async groups(clicked: unknown, selection: unknown): Promise<ReadGroup[] | undefined> {
    const uris = selectedUris(clicked, selection);
    if (uris.length > 0) {
      return selectionToGroups(uris, (uri) => this.api.workspace.getWorkspaceFolder(uri as vscode.Uri));
    }
    const typed = await this.api.window.showInputBox({
      title: 'Read Many Files',
      prompt: 'Files, folders or glob patterns, relative to the first workspace folder (separate with spaces; quote a name with spaces)',
      placeHolder: 'src/**/*.ts README.md docs/',
      value: this.lastInput,
      ignoreFocusOut: true,
    });
    if (typed === undefined) return undefined;
    const paths = splitPatterns(typed);
    if (paths.length === 0) return undefined;
    this.lastInput = typed;
    return [{ paths }];
  }

  async run(destination: Destination, clicked?: unknown, selection?: unknown): Promise<void> {
    const groups = await this.groups(clicked, selection);
    if (!groups) return;
    await this.deliver(destination, groups.map((g) => ({ paths: g.paths, ...(g.root !== undefined ? { root: g.root } : {}) })));
  }

  private async deliver(destination: Destination, requests: ReadManyParams[]): Promise<void> {
    let results: ReadManyResult[];
    try {
      results = await this.api.window.withProgress(
        { location: this.api.ProgressLocation.Window, title: 'readmany: reading' },
        () => Promise.all(requests.map((params) => this.deps.read(params))),
      );
    } catch (error) {
      const choice = await this.api.window.showErrorMessage(`readmany: ${describeError(error)}`, 'Show Output');
      if (choice === 'Show Output') this.deps.showOutput();
      return;
    }
    const text = results.map((r) => r.llmContent).join('\n');
    const { text: summary, omitted } = summarize(results);
    if (destination === 'clipboard') {
      await this.api.env.clipboard.writeText(text);
      this.api.window.setStatusBarMessage(`$(check) readmany: copied ${summary}`, 5000);
    } else {
      const doc = await this.api.workspace.openTextDocument({ content: text, language: languageForFormat(this.deps.format()) });
      await this.api.window.showTextDocument(doc, { preview: false });
      this.api.window.setStatusBarMessage(`$(check) readmany: ${summary}`, 5000);
    }
    const cursors = results.map((r, i) => ({ cursor: r.nextCursor, root: requests[i]?.root })).filter((c) => c.cursor !== undefined);
    if (omitted > 0) {
      const verb = destination === 'clipboard' ? 'Copied' : 'Opened';
      const actions = cursors.length > 0 ? ['Next Page', 'Budget Settings'] : ['Budget Settings'];
      const choice = await this.api.window.showInformationMessage(
        `${verb} ${summary}. Raise readmany.read.maxTotalFiles / maxTotalChars for more at once, or take the next page.`,
        ...actions,
      );
      if (choice === 'Budget Settings') {
        await this.api.commands.executeCommand('workbench.action.openSettings', 'readmany.read');
      } else if (choice === 'Next Page') {
        await this.deliver(
          destination,
          cursors.map((c) => ({ cursor: c.cursor as string, ...(c.root !== undefined ? { root: c.root } : {}) })),
        );
      }
    }
  }
}
