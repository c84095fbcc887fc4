/**
 * The extension's settings (`readmany.*`), typed, each with its default, read once per
 * change. A bad value is a warning in the output channel and the default stays (the
 * server treats its own settings the same way).
 *
 * Three groups:
 * - launch settings (`path`, `interpreter`, `shared`): which server to start; a change
 *   restarts the server;
 * - server settings (PROTOCOL §7: `ignoreFileNames`, `denyPatterns`, `defaultExcludes`,
 *   `maxFileBytes`, `shareOverlays`, `redactSecrets`, `rankingIndex`) and read defaults (`readmany.read.*`: budgets and
 *   format for every read of this window) — sent as `initializationOptions` and, on
 *   change, as `workspace/didChangeConfiguration`;
 * - the agent tool's budgets (`toolMaxTotalTokens`, `toolMaxTotalChars`): applied by the
 *   tool to each call that sets none of its own (the commands use `readmany.read.*`);
 * - UI settings (`statusRefreshSeconds`);
 * - which read tool the agent gets (`mcpServer.enabled`, `mcpServer.alsoLanguageModelTool`,
 *   see `agentTools.ts`): a change re-registers, the server keeps running.
 */
import type { Format } from './protocol';
import type { ToolBudgets } from './tool';

export const SECTION = 'readmany';

/** The subset of `vscode.WorkspaceConfiguration` this module reads. */
export interface ConfigurationLike {
  get<T>(key: string): T | undefined;
}

export interface ServerSettings {
  ignoreFileNames: string[];
  /** null: the server's default list */
  denyPatterns: string[] | null;
  /** null: the server's default list */
  defaultExcludes: string[] | null;
  maxFileBytes: number;
  shareOverlays: boolean;
  /** Replace secrets by `«redacted:…»` placeholders in this window's answers (PROTOCOL §4). */
  redactSecrets: boolean;
  /** When the full-text index behind a focused read is built (PROTOCOL §7 `rankingIndex`). */
  rankingIndex: RankingIndex;
}

/** Per-connection `ReadManyParams` defaults (a request's own value wins). */
export interface ReadDefaults {
  perFileMaxLines: number;
  perFileMaxChars: number;
  maxTotalFiles: number;
  maxTotalChars: number;
  format: Format;
  lineNumbers: boolean;
}

/** Which read tools the agent gets (`readmany.mcpServer.*`). */
export interface McpServerSettings {
  /** Register `readmany mcp` as an MCP server where VS Code has the API (1.101+). */
  enabled: boolean;
  /** Register the Language Model Tool too while the MCP server is registered. */
  alsoLanguageModelTool: boolean;
}

export interface Settings {
  /** Paths of the `readmany` executable to try, in order (first that runs wins). */
  path: string[];
  /** A Python interpreter (and leading arguments) that has `readmany_daemon` installed. */
  interpreter: string[];
  /** true: `readmany lsp` (the shared warm daemon); false: `readmany serve --stdio`. */
  shared: boolean;
  /** Status-bar refresh period in seconds; 0 refreshes only on demand. */
  statusRefreshSeconds: number;
  server: ServerSettings;
  read: ReadDefaults;
  /** The agent tool's budgets (`toolMaxTotalTokens`, `toolMaxTotalChars`). */
  tool: ToolBudgets;
  mcpServer: McpServerSettings;
}

export const FORMATS: readonly Format[] = ['separator', 'heredoc', 'xml', 'json'];

/** PROTOCOL §7 `rankingIndex`: built on the first focused read, at start, or never. */
export type RankingIndex = 'on-demand' | 'always' | 'off';
export const RANKING_INDEX_VALUES: readonly RankingIndex[] = ['on-demand', 'always', 'off'];

export const DEFAULTS: Settings = {
  path: [],
  interpreter: [],
  shared: true,
  statusRefreshSeconds: 30,
  server: {
    ignoreFileNames: ['.readmanyignore'],
    denyPatterns: null,
    defaultExcludes: null,
    maxFileBytes: 20 * 1024 * 1024,
    shareOverlays: true,
    redactSecrets: true,
    rankingIndex: 'on-demand',
  },
  read: {
    perFileMaxLines: 200,
    perFileMaxChars: 20000,
    maxTotalFiles: 20,
    maxTotalChars: 200000,
    format: 'separator',
    lineNumbers: false,
  },
  tool: { maxTotalTokens: 20000, maxTotalChars: 50000 },
  mcpServer: { enabled: true, alsoLanguageModelTool: false },
};

type Check<T> = (value: unknown) => value is T;

const isBool: Check<boolean> = (v): v is boolean => typeof v === 'boolean';
const isStrings: Check<string[]> = (v): v is string[] =>
  Array.isArray(v) && v.every((s) => typeof s === 'string');
const isPositiveInt: Check<number> = (v): v is number =>
  typeof v === 'number' && Number.isInteger(v) && v >= 1;
const isTokenBudget: Check<number> = (v): v is number => isPositiveInt(v) && v >= 1000;
const isAnswerChars: Check<number> = (v): v is number => isPositiveInt(v) && v >= 4000;
const isNonNegative: Check<number> = (v): v is number =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0;
const isFormat: Check<Format> = (v): v is Format =>
  typeof v === 'string' && (FORMATS as readonly string[]).includes(v);
const isRankingIndex: Check<RankingIndex> = (v): v is RankingIndex =>
  typeof v === 'string' && (RANKING_INDEX_VALUES as readonly string[]).includes(v);
const isStringsOrNull: Check<string[] | null> = (v): v is string[] | null => v === null || isStrings(v);

/** `readSettings` reports each setting it could not use through `warn`. */
export function readSettings(config: ConfigurationLike, warn: (message: string) => void = () => {}): Settings {
  function get<T>(key: string, check: Check<T>, fallback: T, expected: string): T {
    let value: unknown = config.get<unknown>(key);
    if (value === undefined) return fallback;
    // A single string where a list is expected is a list of one (a common hand edit).
    if (typeof value === 'string' && Array.isArray(fallback)) value = value === '' ? [] : [value];
    if (check(value)) return value;
    warn(`setting ${SECTION}.${key}: expected ${expected}, got ${JSON.stringify(value)}; using ${JSON.stringify(fallback)}`);
    return fallback;
  }
  const d = DEFAULTS;
  return {
    path: get('path', isStrings, d.path, 'a list of paths'),
    interpreter: get('interpreter', isStrings, d.interpreter, 'a list of strings (interpreter, then its arguments)'),
    shared: get('shared', isBool, d.shared, 'true or false'),
    statusRefreshSeconds: get('statusRefreshSeconds', isNonNegative, d.statusRefreshSeconds, 'a number >= 0'),
    server: {
      ignoreFileNames: get('ignoreFileNames', isStrings, d.server.ignoreFileNames, 'a list of file names'),
      denyPatterns: get('denyPatterns', isStringsOrNull, d.server.denyPatterns, 'a list of patterns or null'),
      defaultExcludes: get('defaultExcludes', isStringsOrNull, d.server.defaultExcludes, 'a list of patterns or null'),
      maxFileBytes: get('maxFileBytes', isPositiveInt, d.server.maxFileBytes, 'an integer >= 1'),
      shareOverlays: get('shareOverlays', isBool, d.server.shareOverlays, 'true or false'),
      redactSecrets: get('redactSecrets', isBool, d.server.redactSecrets, 'true or false'),
      rankingIndex: get('rankingIndex', isRankingIndex, d.server.rankingIndex, RANKING_INDEX_VALUES.join(' | ')),
    },
    read: {
      perFileMaxLines: get('read.perFileMaxLines', isPositiveInt, d.read.perFileMaxLines, 'an integer >= 1'),
      perFileMaxChars: get('read.perFileMaxChars', isPositiveInt, d.read.perFileMaxChars, 'an integer >= 1'),
      maxTotalFiles: get('read.maxTotalFiles', isPositiveInt, d.read.maxTotalFiles, 'an integer >= 1'),
      maxTotalChars: get('read.maxTotalChars', isPositiveInt, d.read.maxTotalChars, 'an integer >= 1'),
      format: get('read.format', isFormat, d.read.format, FORMATS.join(' | ')),
      lineNumbers: get('read.lineNumbers', isBool, d.read.lineNumbers, 'true or false'),
    },
    tool: {
      maxTotalTokens: get('toolMaxTotalTokens', isTokenBudget, d.tool.maxTotalTokens, 'an integer >= 1000'),
      maxTotalChars: get('toolMaxTotalChars', isAnswerChars, d.tool.maxTotalChars, 'an integer >= 4000'),
    },
    mcpServer: {
      enabled: get('mcpServer.enabled', isBool, d.mcpServer.enabled, 'true or false'),
      alsoLanguageModelTool: get('mcpServer.alsoLanguageModelTool', isBool, d.mcpServer.alsoLanguageModelTool, 'true or false'),
    },
  };
}

/** What the server gets as `initializationOptions` (and, on change, as the settings of
 * `workspace/didChangeConfiguration`): PROTOCOL §7 settings plus per-connection
 * `ReadManyParams` defaults, camelCase, a list left out when null (server default). */
export function toInitializationOptions(settings: Settings): Record<string, unknown> {
  const { server, read } = settings;
  const options: Record<string, unknown> = {
    ignoreFileNames: [...server.ignoreFileNames],
    maxFileBytes: server.maxFileBytes,
    shareOverlays: server.shareOverlays,
    redactSecrets: server.redactSecrets,
    rankingIndex: server.rankingIndex,
    perFileMaxLines: read.perFileMaxLines,
    perFileMaxChars: read.perFileMaxChars,
    maxTotalFiles: read.maxTotalFiles,
    maxTotalChars: read.maxTotalChars,
    format: read.format,
    lineNumbers: read.lineNumbers,
  };
  if (server.denyPatterns !== null) options.denyPatterns = [...server.denyPatterns];
  if (server.defaultExcludes !== null) options.defaultExcludes = [...server.defaultExcludes];
  return options;
}

/** The settings that choose the server process: when these change, restart it. */
export function launchKey(settings: Settings): string {
  return JSON.stringify([settings.path, settings.interpreter, settings.shared]);
}

/** The settings the server receives: when only these change, notify it. */
export function serverKey(settings: Settings): string {
  return JSON.stringify(toInitializationOptions(settings));
}
