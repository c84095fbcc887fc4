/**
 * A small hand-written fake of the `vscode` module: just what the extension touches,
 * recording what it was asked to do. Unit tests pass `fake.vscode` where the extension
 * takes the `vscode` API (never loaded as the real module).
 */
import * as path from 'path';
import { pathToFileURL } from 'url';

export class Uri {
  constructor(
    readonly scheme: string,
    readonly fsPath: string,
  ) {}
  static file(p: string): Uri {
    return new Uri('file', p);
  }
  get path(): string {
    return this.fsPath.split(path.sep).join('/');
  }
  toString(): string {
    return this.scheme === 'file' ? pathToFileURL(this.fsPath).href : `${this.scheme}:${this.fsPath}`;
  }
}

export class Disposable {
  constructor(private readonly fn: () => void = () => {}) {}
  dispose(): void {
    this.fn();
  }
}

export class EventEmitter<T> {
  private readonly listeners = new Set<(value: T) => unknown>();
  readonly event = (listener: (value: T) => unknown): Disposable => {
    this.listeners.add(listener);
    return new Disposable(() => this.listeners.delete(listener));
  };
  fire(value: T): void {
    for (const l of [...this.listeners]) l(value);
  }
  get listenerCount(): number {
    return this.listeners.size;
  }
  dispose(): void {
    this.listeners.clear();
  }
}

export class LanguageModelTextPart {
  constructor(readonly value: string) {}
}

export class LanguageModelToolResult {
  constructor(readonly content: unknown[]) {}
}

export class LanguageModelDataPart {
  constructor(
    readonly data: Uint8Array,
    readonly mimeType: string,
  ) {}
  static image(data: Uint8Array, mime: string): LanguageModelDataPart {
    return new LanguageModelDataPart(data, mime);
  }
}

/** VS Code 1.101's `McpStdioServerDefinition`. */
export class McpStdioServerDefinition {
  cwd?: Uri;
  constructor(
    readonly label: string,
    public command: string,
    public args: string[] = [],
    public env: Record<string, string | number | null> = {},
    public version?: string,
  ) {}
}

/** A provider registered through `lm.registerMcpServerDefinitionProvider`. */
export interface FakeMcpProvider {
  onDidChangeMcpServerDefinitions?: (listener: () => unknown) => Disposable;
  provideMcpServerDefinitions(token: unknown): Promise<McpStdioServerDefinition[]> | McpStdioServerDefinition[];
}

export class MarkdownString {
  constructor(readonly value: string = '') {}
}

export class ThemeColor {
  constructor(readonly id: string) {}
}

export enum StatusBarAlignment {
  Left = 1,
  Right = 2,
}

export enum ProgressLocation {
  SourceControl = 1,
  Window = 10,
  Notification = 15,
}

export class CancellationTokenSource {
  private readonly emitter = new EventEmitter<void>();
  readonly token = {
    isCancellationRequested: false,
    onCancellationRequested: this.emitter.event,
  };
  cancel(): void {
    this.token.isCancellationRequested = true;
    this.emitter.fire();
  }
}

export interface FakeStatusBarItem {
  id: string;
  alignment: StatusBarAlignment;
  priority: number | undefined;
  name: string | undefined;
  text: string;
  tooltip: MarkdownString | string | undefined;
  command: string | undefined;
  backgroundColor: ThemeColor | undefined;
  visible: boolean;
  disposed: boolean;
  show(): void;
  hide(): void;
  dispose(): void;
}

export interface FakeOutputChannel {
  name: string;
  lines: string[];
  shown: number;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
  debug(message: string): void;
  trace(message: string): void;
  appendLine(message: string): void;
  append(message: string): void;
  show(preserveFocus?: boolean): void;
  dispose(): void;
}

export interface FakeOptions {
  /** `readmany` settings by key relative to the section (`path`, `read.maxTotalFiles`) */
  settings?: Record<string, unknown>;
  /** workspace folders (absolute paths) */
  folders?: string[];
  /** false: a VS Code older than 1.106, without LanguageModelDataPart */
  dataPart?: boolean;
  /** false: a host without `vscode.lm` */
  lm?: boolean;
  /** true: a host with the MCP server definition API (VS Code 1.101+) */
  mcp?: boolean;
  /** answers of showInputBox, in order (undefined: the person pressed Escape) */
  inputs?: (string | undefined)[];
  /** answers of show*Message, in order */
  choices?: (string | undefined)[];
}

export interface Message {
  kind: 'info' | 'warning' | 'error';
  text: string;
  items: string[];
}

export function createFakeVscode(options: FakeOptions = {}) {
  const settings: Record<string, unknown> = { ...(options.settings ?? {}) };
  const inputs = [...(options.inputs ?? [])];
  const choices = [...(options.choices ?? [])];
  const commands = new Map<string, (...args: unknown[]) => unknown>();
  const tools = new Map<string, unknown>();
  const mcpProviders = new Map<string, FakeMcpProvider>();
  const contextKeys = new Map<string, unknown>();
  const workspaceFolders = new EventEmitter<unknown>();
  const configuration = new EventEmitter<{ affectsConfiguration(section: string): boolean }>();
  const recorded = {
    outputs: [] as FakeOutputChannel[],
    statusItems: [] as FakeStatusBarItem[],
    clipboard: [] as string[],
    messages: [] as Message[],
    statusMessages: [] as string[],
    inputBoxes: [] as unknown[],
    documents: [] as { content: string; language: string | undefined }[],
    shownDocuments: [] as unknown[],
    executed: [] as unknown[][],
  };
  const folders = (options.folders ?? []).map((p, index) => ({ name: path.basename(p), index, uri: Uri.file(p) }));

  function message(kind: Message['kind']) {
    return async (text: string, ...items: string[]): Promise<string | undefined> => {
      recorded.messages.push({ kind, text, items });
      return choices.shift();
    };
  }

  const vscode = {
    Uri,
    Disposable,
    EventEmitter,
    CancellationTokenSource,
    LanguageModelTextPart,
    LanguageModelToolResult,
    ...(options.dataPart === false ? {} : { LanguageModelDataPart }),
    ...(options.mcp === true ? { McpStdioServerDefinition } : {}),
    MarkdownString,
    ThemeColor,
    StatusBarAlignment,
    ProgressLocation,
    window: {
      createOutputChannel(name: string): FakeOutputChannel {
        const lines: string[] = [];
        const channel: FakeOutputChannel = {
          name,
          lines,
          shown: 0,
          info: (m) => lines.push(`[info] ${m}`),
          warn: (m) => lines.push(`[warning] ${m}`),
          error: (m) => lines.push(`[error] ${m}`),
          debug: (m) => lines.push(`[debug] ${m}`),
          trace: (m) => lines.push(`[trace] ${m}`),
          appendLine: (m) => lines.push(m),
          append: (m) => lines.push(m),
          show: () => {
            channel.shown += 1;
          },
          dispose: () => {},
        };
        recorded.outputs.push(channel);
        return channel;
      },
      createStatusBarItem(id: string, alignment: StatusBarAlignment, priority?: number): FakeStatusBarItem {
        const item: FakeStatusBarItem = {
          id,
          alignment,
          priority,
          name: undefined,
          text: '',
          tooltip: undefined,
          command: undefined,
          backgroundColor: undefined,
          visible: false,
          disposed: false,
          show: () => {
            item.visible = true;
          },
          hide: () => {
            item.visible = false;
          },
          dispose: () => {
            item.disposed = true;
          },
        };
        recorded.statusItems.push(item);
        return item;
      },
      async showInputBox(opts: unknown): Promise<string | undefined> {
        recorded.inputBoxes.push(opts);
        return inputs.shift();
      },
      showInformationMessage: message('info'),
      showWarningMessage: message('warning'),
      showErrorMessage: message('error'),
      setStatusBarMessage(text: string): Disposable {
        recorded.statusMessages.push(text);
        return new Disposable();
      },
      async withProgress<R>(_options: unknown, task: (progress: { report(v: unknown): void }) => Promise<R>): Promise<R> {
        return task({ report: () => {} });
      },
      async showTextDocument(doc: unknown): Promise<unknown> {
        recorded.shownDocuments.push(doc);
        return { document: doc };
      },
    },
    workspace: {
      workspaceFolders: folders.length > 0 ? folders : undefined,
      getWorkspaceFolder(uri: { fsPath: string }) {
        return folders.find((f) => {
          const rel = path.relative(f.uri.fsPath, uri.fsPath);
          return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
        });
      },
      getConfiguration(section?: string) {
        const prefix = section ? `${section}.` : '';
        const own = (key: string) => (prefix === 'readmany.' ? key : `${prefix}${key}`.replace(/^readmany\./, ''));
        return {
          get<T>(key: string, fallback?: T): T | undefined {
            const k = own(key);
            return k in settings ? (settings[k] as T) : fallback;
          },
          has: (key: string) => own(key) in settings,
        };
      },
      onDidChangeConfiguration: configuration.event,
      onDidChangeWorkspaceFolders: workspaceFolders.event,
      async openTextDocument(opts: { content: string; language?: string }) {
        recorded.documents.push({ content: opts.content, language: opts.language });
        return { getText: () => opts.content, languageId: opts.language ?? 'plaintext', uri: new Uri('untitled', 'Untitled-1') };
      },
    },
    commands: {
      registerCommand(id: string, fn: (...args: unknown[]) => unknown): Disposable {
        if (commands.has(id)) throw new Error(`command ${id} already registered`);
        commands.set(id, fn);
        return new Disposable(() => commands.delete(id));
      },
      async executeCommand(id: string, ...args: unknown[]): Promise<unknown> {
        recorded.executed.push([id, ...args]);
        if (id === 'setContext') contextKeys.set(String(args[0]), args[1]);
        return commands.get(id)?.(...args);
      },
    },
    env: {
      clipboard: {
        async writeText(text: string): Promise<void> {
          recorded.clipboard.push(text);
        },
        async readText(): Promise<string> {
          return recorded.clipboard.at(-1) ?? '';
        },
      },
    },
    ...(options.lm === false
      ? {}
      : {
          lm: {
            registerTool(name: string, tool: unknown): Disposable {
              tools.set(name, tool);
              return new Disposable(() => tools.delete(name));
            },
            ...(options.mcp === true
              ? {
                  registerMcpServerDefinitionProvider(id: string, provider: FakeMcpProvider): Disposable {
                    if (mcpProviders.has(id)) throw new Error(`MCP provider ${id} already registered`);
                    mcpProviders.set(id, provider);
                    return new Disposable(() => mcpProviders.delete(id));
                  },
                }
              : {}),
          },
        }),
  };

  return {
    vscode,
    recorded,
    commands,
    tools,
    mcpProviders,
    contextKeys,
    settings,
    /** fire onDidChangeWorkspaceFolders after changing `vscode.workspace.workspaceFolders` */
    changeFolders(paths: string[]): void {
      const next = paths.map((p, index) => ({ name: path.basename(p), index, uri: Uri.file(p) }));
      (vscode.workspace as { workspaceFolders: unknown }).workspaceFolders = next.length > 0 ? next : undefined;
      workspaceFolders.fire({ added: next, removed: [] });
    },
    /** change settings as the person would, firing onDidChangeConfiguration */
    changeSettings(changes: Record<string, unknown>): void {
      Object.assign(settings, changes);
      configuration.fire({
        affectsConfiguration: (section: string) =>
          Object.keys(changes).some((k) => `readmany.${k}` === section || `readmany.${k}`.startsWith(`${section}.`)),
      });
    },
    get configurationListeners(): number {
      return configuration.listenerCount;
    },
  };
}

export type FakeVscode = ReturnType<typeof createFakeVscode>;

/** The fake as the `typeof vscode` the extension's modules take. */
export function asVscode(fake: FakeVscode): typeof import('vscode') {
  return fake.vscode as unknown as typeof import('vscode');
}
