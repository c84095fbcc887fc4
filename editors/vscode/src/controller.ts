/**
 * Wires the features to VS Code: output channel, settings, the server, what the agent
 * reads with (the MCP server and/or the Language Model Tool, `agentTools.ts`), the
 * commands, the status bar. Receives the `vscode` API and an LSP client
 * factory from `extension.ts`, so unit tests drive it with a fake `vscode` and a client
 * of their own.
 */
import type * as vscode from 'vscode';
import { AgentTools } from './agentTools';
import { ReadCommands } from './commands';
import { findServer, type DiscoveryHost, type ServerCommand } from './discovery';
import { METHODS, type ReadManyParams, type ReadManyResult, type StatusResult } from './protocol';
import { ServerManager, type CancellationTokenLike, type LspClient } from './server';
import { launchKey, readSettings, SECTION, serverKey, toInitializationOptions, type Settings } from './settings';
import { REFRESH_COMMAND, StatusBar, type StatusInput, type Timers } from './statusBar';
import { createReadManyTool, TOOL_NAME, type ToolApi, type ToolPartsApi } from './tool';

export const OUTPUT_NAME = 'Read Many Files';

export const COMMANDS = {
  restartServer: 'readmany.restartServer',
  copyToClipboard: 'readmany.copyToClipboard',
  openInEditor: 'readmany.openInEditor',
  refreshStatus: REFRESH_COMMAND,
  showOutput: 'readmany.showOutput',
} as const;

/** What the LSP client factory gets besides the server command. */
export interface ClientOptions {
  /** computed at each (re)start, so a restart sends the current settings */
  initializationOptions(): Record<string, unknown>;
  output: vscode.LogOutputChannel;
  /** the first workspace folder, the server's working directory */
  cwd: string | undefined;
}

export interface ControllerDeps {
  createClient(server: ServerCommand, options: ClientOptions): LspClient;
  host(workspaceFolder: string | undefined): DiscoveryHost;
  timers?: Timers;
  now?: () => number;
}

/** What `activate` returns to other extensions. */
export interface ReadManyApi {
  read(params: ReadManyParams): Promise<ReadManyResult>;
  status(): Promise<StatusResult>;
}

export class ReadManyController implements vscode.Disposable {
  readonly output: vscode.LogOutputChannel;
  readonly server: ServerManager;
  readonly statusBar: StatusBar;
  readonly commands: ReadCommands;
  readonly agentTools: AgentTools;
  settings: Settings;
  private readonly disposables: { dispose(): unknown }[] = [];
  private readonly now: () => number;

  constructor(
    private readonly api: typeof vscode,
    deps: ControllerDeps,
  ) {
    this.now = deps.now ?? Date.now;
    this.output = api.window.createOutputChannel(OUTPUT_NAME, { log: true });
    this.disposables.push(this.output);
    this.settings = this.readSettings();

    this.server = new ServerManager({
      discover: () => findServer(this.settings, deps.host(this.firstFolder()), this.output),
      createClient: (server) =>
        deps.createClient(server, {
          initializationOptions: () => toInitializationOptions(this.settings),
          output: this.output,
          cwd: this.firstFolder(),
        }),
      log: this.output,
      now: this.now,
    });

    this.statusBar = new StatusBar(api, () => this.statusInput(), deps.timers);
    this.statusBar.setPeriod(this.settings.statusRefreshSeconds);
    this.disposables.push(this.statusBar);
    this.disposables.push(this.server.onDidChangeState(() => void this.statusBar.refresh()));

    this.commands = new ReadCommands(api, {
      read: (params) => this.read(params),
      format: () => this.settings.read.format,
      showOutput: () => this.output.show(true),
    });

    const register = (id: string, fn: (...args: unknown[]) => unknown): void => {
      this.disposables.push(api.commands.registerCommand(id, fn));
    };
    register(COMMANDS.restartServer, () => this.restart());
    register(COMMANDS.copyToClipboard, (clicked, selection) => this.commands.run('clipboard', clicked, selection));
    register(COMMANDS.openInEditor, (clicked, selection) => this.commands.run('editor', clicked, selection));
    register(COMMANDS.refreshStatus, () => this.refreshStatus());
    register(COMMANDS.showOutput, () => this.output.show(true));

    this.agentTools = new AgentTools(api, {
      settings: () => this.settings,
      folders: () => (api.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
      server: () => this.server.found(),
      registerTool: () => this.registerTool(),
      log: this.output,
    });
    this.disposables.push(this.agentTools);
    this.disposables.push(
      this.server.onDidChangeState((state) => {
        if (state === 'running' || state === 'notFound' || state === 'failed') void this.agentTools.refresh();
      }),
    );
    this.disposables.push(api.workspace.onDidChangeWorkspaceFolders(() => void this.agentTools.refresh()));

    this.disposables.push(api.workspace.onDidChangeConfiguration((e) => void this.configurationChanged(e)));
  }

  /** The Language Model Tool, registered; undefined where the host has no tools API. */
  private registerTool(): vscode.Disposable | undefined {
    const api = this.api;
    if (typeof api.lm?.registerTool !== 'function') {
      this.output.warn(`This VS Code has no language model tools API (1.95 or newer has it): ${TOOL_NAME} is not registered`);
      return undefined;
    }
    const toolApi: ToolApi = {
      LanguageModelTextPart: api.LanguageModelTextPart,
      // 1.95's typings take text and prompt-tsx parts; hosts from 1.106 take data parts too.
      LanguageModelToolResult: api.LanguageModelToolResult as unknown as ToolApi['LanguageModelToolResult'],
      LanguageModelDataPart: (api as Partial<ToolPartsApi>).LanguageModelDataPart,
    };
    const tool = createReadManyTool(toolApi, {
      read: (params, token) => this.read(params, token),
      budgets: () => this.settings.tool,
      workspaceFolders: () => api.workspace.workspaceFolders ?? [],
    });
    return api.lm.registerTool(TOOL_NAME, tool);
  }

  /** The API other extensions get from `activate`. */
  get publicApi(): ReadManyApi {
    return {
      read: (params) => this.read(params),
      status: () => this.server.request<StatusResult>(METHODS.status, {}),
    };
  }

  async start(): Promise<void> {
    await this.server.start();
    await this.statusBar.refresh();
  }

  async restart(): Promise<void> {
    await this.server.restart();
    await this.statusBar.refresh();
  }

  async read(params: ReadManyParams, token?: CancellationTokenLike): Promise<ReadManyResult> {
    try {
      return await this.server.request<ReadManyResult>(METHODS.read, params, token);
    } finally {
      void this.statusBar.refresh();
    }
  }

  /** The status bar's click: retry when the server is not running, else refresh. */
  async refreshStatus(): Promise<void> {
    if (this.server.state === 'notFound' || this.server.state === 'failed') {
      this.output.show(true);
      await this.restart();
    } else {
      await this.statusBar.refresh();
    }
  }

  async statusInput(): Promise<StatusInput> {
    const { state, server, error, connectedAt } = this.server;
    const base: StatusInput = { state, ...(server ? { server } : {}), ...(error ? { error } : {}) };
    if (state !== 'running') return base;
    const status = await this.server.request<StatusResult>(METHODS.status, {});
    return { ...base, status, ...(connectedAt !== undefined ? { connectedSeconds: (this.now() - connectedAt) / 1000 } : {}) };
  }

  async configurationChanged(event: vscode.ConfigurationChangeEvent): Promise<void> {
    if (!event.affectsConfiguration(SECTION)) return;
    const previous = this.settings;
    this.settings = this.readSettings();
    this.statusBar.setPeriod(this.settings.statusRefreshSeconds);
    this.agentTools.update();
    if (launchKey(this.settings) !== launchKey(previous)) {
      this.output.info('readmany.path, readmany.interpreter or readmany.shared changed: restarting the server');
      await this.restart();
    } else if (serverKey(this.settings) !== serverKey(previous)) {
      this.output.info('readmany settings changed: sending workspace/didChangeConfiguration');
      await this.server.notify('workspace/didChangeConfiguration', {
        settings: { [SECTION]: toInitializationOptions(this.settings) },
      });
    }
  }

  private readSettings(): Settings {
    return readSettings(this.api.workspace.getConfiguration(SECTION), (message) => this.output.warn(message));
  }

  private firstFolder(): string | undefined {
    return this.api.workspace.workspaceFolders?.[0]?.uri.fsPath;
  }

  async stop(): Promise<void> {
    await this.server.stop();
  }

  /** Unregister everything; a server still running is stopped (deactivate awaits that). */
  dispose(): void {
    for (const d of this.disposables.splice(0).reverse()) d.dispose();
    if (this.server.state === 'running' || this.server.state === 'starting') void this.server.stop();
  }
}
