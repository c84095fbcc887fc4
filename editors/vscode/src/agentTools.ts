/**
 * What an agent in VS Code reads with: `readmany mcp` registered as an MCP server, the
 * Language Model Tool `readmany_read_many_files`, or both.
 *
 * - The MCP server is registered through `vscode.lm.registerMcpServerDefinitionProvider`
 *   (VS Code 1.101+, contribution `mcpServerDefinitionProviders`), so agent mode lists
 *   readmany's MCP tools with no hand-written `mcp.json`. Its definition is the command
 *   discovery found (`discovery.ts`) with `mcp` and one `--root` per workspace folder.
 *   VS Code starts a stdio server of an extension's provider in that extension's host:
 *   the extension is a workspace extension (`extensionKind: ["workspace"]`), so in a
 *   remote window the server runs on the remote machine, beside the files (a server
 *   written by hand into the user's `mcp.json` starts on the local one: vscode #257611).
 * - While the MCP server is registered the Language Model Tool is not, so the model sees
 *   one read tool; `readmany.mcpServer.alsoLanguageModelTool` asks for both. The tool's
 *   contribution is shown only while the context key `readmany.languageModelTool` is
 *   true (its `when` clause), since VS Code lists a contributed tool before the
 *   extension registers it.
 * - `readmany.mcpServer.enabled: false`, or a VS Code without the API, registers the
 *   tool alone.
 */
import type * as vscode from 'vscode';
import { describeCommand, modeArgs, type ServerCommand } from './discovery';
import type { Logger } from './server';
import type { Settings } from './settings';
import { TOOL_NAME } from './tool';

/** The id of the `mcpServerDefinitionProviders` contribution (package.json). */
export const MCP_PROVIDER_ID = 'readmany.mcpServer';
/** The server's label in VS Code (its MCP server id is `<extension id>/readmany`). */
export const MCP_SERVER_LABEL = 'readmany';
/** The context key of the tool contribution's `when` clause. */
export const TOOL_CONTEXT_KEY = 'readmany.languageModelTool';

/**
 * The arguments of `readmany mcp` for `server` (what discovery found: its leading
 * arguments, e.g. `-m readmany_daemon`, then the LSP mode's, which are dropped):
 * `mcp`, then `--root DIR` for each workspace folder, in the window's order (absolute
 * paths on the machine the extension runs on; the first is the server's default root,
 * a call's `root` picks another), then `--no-daemon` when the window has a server of
 * its own (`readmany.shared` off, or Windows: `mode` `stdio`). No folder: no `--root`,
 * and the server follows the client's MCP roots, else its working directory
 * (docs/mcp.md, "Roots").
 */
export function mcpServerArgs(server: ServerCommand, folders: readonly string[]): string[] {
  const tail = modeArgs(server.mode);
  const base = server.args.slice(0, server.args.length - tail.length);
  const roots = folders.flatMap((folder) => ['--root', folder]);
  return [...base, 'mcp', ...roots, ...(server.mode === 'stdio' ? ['--no-daemon'] : [])];
}

/**
 * The window's settings the MCP server takes from its environment (`READMANY_*`,
 * PROTOCOL §7; values JSON): the server settings (`readmany.ignoreFileNames`,
 * `denyPatterns` and `defaultExcludes` when set, `maxFileBytes`, `shareOverlays`,
 * `redactSecrets`, `rankingIndex`) and the agent tool's budgets (`readmany.toolMaxTotalTokens`,
 * `readmany.toolMaxTotalChars`: the server's `toolMaxTotalTokens`/`toolMaxTotalChars`).
 * Always `READMANY_MCP_STRUCTURED_TEXT=true` (`readmany mcp --structured-text`): when a
 * tool result has `structuredContent`, VS Code gives the model that JSON alone and drops
 * the text blocks, so the tools' text (the file contents) must be in it, as
 * `llmContent` (docs/mcp.md). An environment variable rather than the flag: a readmany
 * from before the option ignores it and still starts.
 */
export function mcpServerEnv(settings: Settings): Record<string, string> {
  const { server, tool } = settings;
  const env: Record<string, string> = {
    READMANY_IGNORE_FILE_NAMES: JSON.stringify(server.ignoreFileNames),
    READMANY_MAX_FILE_BYTES: String(server.maxFileBytes),
    READMANY_SHARE_OVERLAYS: String(server.shareOverlays),
    READMANY_REDACT_SECRETS: String(server.redactSecrets),
    READMANY_RANKING_INDEX: server.rankingIndex,
    READMANY_TOOL_MAX_TOTAL_TOKENS: String(tool.maxTotalTokens),
    READMANY_TOOL_MAX_TOTAL_CHARS: String(tool.maxTotalChars),
    READMANY_MCP_STRUCTURED_TEXT: 'true',
  };
  if (server.denyPatterns !== null) env.READMANY_DENY_PATTERNS = JSON.stringify(server.denyPatterns);
  if (server.defaultExcludes !== null) env.READMANY_DEFAULT_EXCLUDES = JSON.stringify(server.defaultExcludes);
  return env;
}

/** The parts of the `vscode` API this module uses (1.101 typings; a host may lack the MCP ones). */
export type AgentToolsApi = Pick<typeof vscode, 'Uri' | 'EventEmitter' | 'commands'> & {
  McpStdioServerDefinition?: typeof vscode.McpStdioServerDefinition;
  lm?: Partial<Pick<typeof vscode.lm, 'registerTool' | 'registerMcpServerDefinitionProvider'>>;
};

/** The MCP server definition VS Code starts: label `readmany`, `server`'s command with
 * `mcpServerArgs`, `mcpServerEnv`, the first folder as working directory, and the
 * server's `--version` as the definition's version (a new one makes VS Code refresh the
 * tools it cached). */
export function mcpServerDefinition(
  api: Required<Pick<AgentToolsApi, 'McpStdioServerDefinition'>> & Pick<AgentToolsApi, 'Uri'>,
  server: ServerCommand,
  folders: readonly string[],
  settings: Settings,
): vscode.McpStdioServerDefinition {
  const definition = new api.McpStdioServerDefinition(MCP_SERVER_LABEL, server.command, mcpServerArgs(server, folders), mcpServerEnv(settings), server.version);
  if (folders[0] !== undefined) definition.cwd = api.Uri.file(folders[0]);
  return definition;
}

export interface AgentToolsDeps {
  settings(): Settings;
  /** fsPaths of the window's workspace folders, in order */
  folders(): string[];
  /** the server discovery found (after any start in progress), or undefined */
  server(): Promise<ServerCommand | undefined>;
  /** registers the Language Model Tool; undefined where the host has no tools API */
  registerTool(): vscode.Disposable | undefined;
  log: Logger;
}

/**
 * Keeps the registrations in line with the settings and the host: `update()` after a
 * settings change, `refresh()` when the definition may have changed (workspace folders,
 * a server found again). `mcpRegistered`/`toolRegistered` say what is registered now.
 */
export class AgentTools implements vscode.Disposable {
  private mcp: vscode.Disposable | undefined;
  private tool: vscode.Disposable | undefined;
  private readonly changed: vscode.EventEmitter<void>;
  private lastDefinition: string | undefined;
  private updated = false;

  constructor(
    private readonly api: AgentToolsApi,
    private readonly deps: AgentToolsDeps,
  ) {
    this.changed = new api.EventEmitter<void>();
    this.update();
  }

  get mcpRegistered(): boolean {
    return this.mcp !== undefined;
  }

  get toolRegistered(): boolean {
    return this.tool !== undefined;
  }

  /** Whether this VS Code has the MCP server definition API (1.101 or newer). */
  get hasMcpApi(): boolean {
    return typeof this.api.lm?.registerMcpServerDefinitionProvider === 'function' && typeof this.api.McpStdioServerDefinition === 'function';
  }

  /** Register or unregister each of the two as the settings now say. */
  update(): void {
    const { mcpServer } = this.deps.settings();
    const wantMcp = mcpServer.enabled && this.hasMcpApi;
    if (mcpServer.enabled && !this.hasMcpApi && this.mcp === undefined) {
      this.deps.log.info('This VS Code has no MCP server definition API (1.101 or newer has it): readmany mcp is not registered');
    }
    if (wantMcp && this.mcp === undefined) this.registerMcp();
    if (!wantMcp && this.mcp !== undefined) {
      this.mcp.dispose();
      this.mcp = undefined;
      this.lastDefinition = undefined;
      this.deps.log.info('readmany.mcpServer.enabled is off: the MCP server is unregistered');
    }
    const wantTool = !wantMcp || mcpServer.alsoLanguageModelTool;
    if (wantTool && this.tool === undefined) {
      this.tool = this.deps.registerTool();
      if (this.tool) this.deps.log.info(`Language Model Tool ${TOOL_NAME} registered`);
    } else if (!wantTool && (this.tool !== undefined || !this.updated)) {
      this.tool?.dispose();
      this.tool = undefined;
      this.deps.log.info(`Language Model Tool ${TOOL_NAME} not registered while the MCP server is (readmany.mcpServer.alsoLanguageModelTool registers both)`);
    }
    this.updated = true;
    void this.api.commands.executeCommand('setContext', TOOL_CONTEXT_KEY, this.tool !== undefined);
    if (this.mcp !== undefined) void this.refresh();
  }

  /** Tell VS Code the definition changed, when it did (folders, server, settings). */
  async refresh(): Promise<void> {
    if (this.mcp === undefined || this.lastDefinition === undefined) return;
    const definition = await this.definition();
    const key = JSON.stringify(definition ?? null);
    if (this.mcp !== undefined && key !== this.lastDefinition) this.changed.fire();
  }

  private async definition(): Promise<vscode.McpStdioServerDefinition | undefined> {
    const server = await this.deps.server();
    const Definition = this.api.McpStdioServerDefinition;
    if (!server || !Definition) return undefined;
    return mcpServerDefinition({ McpStdioServerDefinition: Definition, Uri: this.api.Uri }, server, this.deps.folders(), this.deps.settings());
  }

  private registerMcp(): void {
    const lm = this.api.lm;
    if (typeof lm?.registerMcpServerDefinitionProvider !== 'function') return;
    this.mcp = lm.registerMcpServerDefinitionProvider(MCP_PROVIDER_ID, {
      onDidChangeMcpServerDefinitions: this.changed.event,
      provideMcpServerDefinitions: async () => {
        const definition = await this.definition();
        this.lastDefinition = JSON.stringify(definition ?? null);
        if (!definition) {
          this.deps.log.warn('MCP server: readmany was not found, so VS Code gets no readmany server (see the discovery lines above)');
          return [];
        }
        this.deps.log.info(`MCP server for VS Code's agent: ${describeCommand(definition.command, definition.args)}`);
        return [definition];
      },
    });
  }

  dispose(): void {
    this.mcp?.dispose();
    this.tool?.dispose();
    this.mcp = undefined;
    this.tool = undefined;
    this.changed.dispose();
  }
}
