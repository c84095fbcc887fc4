/**
 * The wire types of the readmany daemon (PROTOCOL.md §2-§4), as the extension sees them.
 * Plain interfaces: nothing here imports `vscode` or a JSON-RPC library.
 */

/** Custom JSON-RPC methods (PROTOCOL §2). */
export const METHODS = {
  read: 'readMany/read',
  files: 'readMany/files',
  status: 'readMany/status',
} as const;

/** Error codes the daemon answers with (JSON-RPC 2.0, LSP). */
export const ERROR_CODES = {
  invalidParams: -32602,
  requestCancelled: -32800,
  serverNotInitialized: -32002,
} as const;

/**
 * One file with an optional line window: `offset` is the 1-based first line, `limit` a line count,
 * `column` the 1-based character of line `offset` where the window starts (a cut line's `nextColumn`).
 */
export interface FileSpec {
  path: string;
  offset?: number;
  limit?: number;
  column?: number;
  /** A notebook's cells, 1-based inclusive: `"3-7"` or `"4"`. */
  cells?: string;
  /** One symbol's lines: the outline's names joined by `.` (`"Config.load"`), or a Markdown heading. */
  symbol?: string | null;
  /** A 1-based line: the innermost function, method, class or section around it is read. */
  enclosing?: number | null;
}

/** A receipt: the SHA-256 (hex) of a file's bytes as the caller holds them. */
export interface Known {
  path: string;
  sha256: string;
}

export interface FileFilteringOptions {
  respectGitIgnore?: boolean;
  respectIgnoreFiles?: boolean;
}

export type Packing = 'auto' | 'request-order' | 'smallest-first' | 'outlines';
/** How the delivered files are laid out; `rank` needs `focus` (PROTOCOL §3). */
export type Order = 'request-order' | 'rank' | 'stable';
export type Format = 'separator' | 'heredoc' | 'xml' | 'json';
export type Sync = 'auto' | 'stat' | 'none';

/** `changes`: read what changed since a commit (`base`: a commit, branch or tag; none: `HEAD`). */
export interface ChangesSpec {
  base?: string | null;
}

/** `readMany/read` params (PROTOCOL §3), canonical camelCase names. Every field is optional
 * on the wire; at least one of `paths`, `files`, `include`, `cursor`, `changes` must be given. */
export interface ReadManyParams {
  paths?: (string | FileSpec)[];
  files?: FileSpec[];
  include?: string[];
  exclude?: string[];
  recursive?: boolean;
  useDefaultExcludes?: boolean;
  fileFilteringOptions?: FileFilteringOptions;
  perFileMaxLines?: number;
  perFileMaxChars?: number;
  maxTotalFiles?: number;
  maxTotalChars?: number;
  maxTotalTokens?: number;
  perFileMaxTokens?: number;
  /** Characters of the whole `llmContent` (framing and notices included), at least 4000. */
  maxAnswerChars?: number;
  preferFullRead?: boolean;
  packing?: Packing;
  order?: Order;
  /** What the task is about (1 to 2,000 characters): the files it ranks first fill the budget. */
  focus?: string;
  stopOnError?: boolean;
  format?: Format;
  lineNumbers?: boolean;
  absolutePaths?: boolean;
  root?: string;
  sync?: Sync;
  cursor?: string;
  /** Receipts: a file whose bytes still hash the same comes back `unchanged`, without content. */
  known?: Known[];
  /** false: show secrets as they are (default: the `redactSecrets` setting, true). */
  redactSecrets?: boolean;
  /** What changed since a commit: the changed lines widened to their symbols, new files whole. */
  changes?: ChangesSpec | null;
}

/** Every top-level `ReadManyParams` field, in PROTOCOL §3 order. */
export const READ_MANY_PARAM_FIELDS = [
  'paths',
  'files',
  'include',
  'exclude',
  'recursive',
  'useDefaultExcludes',
  'fileFilteringOptions',
  'perFileMaxLines',
  'perFileMaxChars',
  'maxTotalFiles',
  'maxTotalChars',
  'maxTotalTokens',
  'perFileMaxTokens',
  'maxAnswerChars',
  'preferFullRead',
  'packing',
  'order',
  'focus',
  'stopOnError',
  'format',
  'lineNumbers',
  'absolutePaths',
  'root',
  'sync',
  'cursor',
  'known',
  'redactSecrets',
  'changes',
] as const satisfies readonly (keyof ReadManyParams)[];

// Compile-time check that the list above names every field of ReadManyParams.
type MissingField = Exclude<keyof ReadManyParams, (typeof READ_MANY_PARAM_FIELDS)[number]>;
export const ALL_FIELDS_LISTED: [MissingField] extends [never] ? true : MissingField = true;

export type FileStatus = 'ok' | 'partial' | 'omitted' | 'skipped' | 'error' | 'unchanged';

export interface FileResult {
  path: string;
  status: FileStatus;
  code?: string;
  message?: string;
  lineStart?: number;
  lineEnd?: number;
  totalLines?: number;
  nextOffset?: number;
  /** Line `lineEnd` was cut short: its rest starts at this 1-based character. */
  nextColumn?: number;
  /** The symbol shown by a `symbol` or `enclosing` read, as the outline spells it. */
  symbol?: string;
  /** A changed file of a `changes` read: the line spans shown, `[start, end]`, 1-based inclusive. */
  spans?: [number, number][];
  chars?: number;
  encoding?: string;
  /** Bytes of UTF-8 text that were not valid UTF-8, each shown as U+FFFD. */
  replacedBytes?: number;
  mimeType?: string;
  ignoredBy?: string;
  source?: 'overlay' | 'cache' | 'disk';
  sha256?: string;
  /** Lines shown with a secret replaced by a `«redacted:<kind>:<hash>»` placeholder (1-based). */
  redactions?: { line: number; kind: string }[];
  /** A cut file's unseen lines, or a file given as its outline (`packing: 'outlines'`). */
  outline?: { name: string; kind: string; lineStart: number; lineEnd: number; depth: number }[];
  /** A ranked answer (`focus`): the entry's place, 1-based, best first, and why (<= 80 characters). */
  rank?: number;
  why?: string;
}

/** An image or PDF named explicitly: `data` is base64. */
export interface Attachment {
  path: string;
  mimeType: string;
  data: string;
}

export interface Summary {
  matched: number;
  read: number;
  truncated: number;
  omitted: number;
  skipped: number;
  errors: number;
  /** Files whose receipt (`known`) held: not sent again. */
  unchanged: number;
  totalChars: number;
  estimatedTokens: number;
  hidden?: Record<string, number>;
  /** A ranked answer's (`focus`): the signals that ranked and the full-text index's progress. */
  ranking?: { signals: string[]; indexedFiles: number; pendingFiles: number };
}

/** `readMany/read` result (PROTOCOL §4). */
export interface ReadManyResult {
  llmContent: string;
  /** Always present (possibly empty). */
  attachments: Attachment[];
  returnDisplay: string;
  summary: Summary;
  files: FileResult[];
  packing?: {
    strategy: string;
    switchedForCoverage?: boolean;
    fullIncludedCount?: number;
    fullIncludedSuccessCount?: number;
    partialIncludedPath?: string | null;
    omittedPaths?: string[];
    omittedTruncated?: boolean;
  };
  clock: string;
  nextCursor?: string;
  /** Files created after an earlier page of this cursor chain, in the part already delivered. */
  createdPaths?: string[];
  /** A `changes` read: the base's commit id, the files deleted and renamed since. */
  changes?: { base: string; deleted: string[]; renamed: { from: string; to: string }[] };
}

export interface RootStatus {
  root: string;
  name: string;
  /** null while the root's index is not built. */
  files: number | null;
  clock?: string;
  indexed: boolean;
  connections?: number;
  watcher?: { state: string; warnings: string[] };
  warnings?: string[];
  error?: string;
}

/** `readMany/status` result: what the status bar shows. */
export interface StatusResult {
  roots: RootStatus[];
  fileCount: number;
  cache?: { bytes: number; hitRate: number };
  watcher?: { state: string; warnings: string[] };
  clock?: string;
  /** seconds since the server process started */
  uptime?: number;
  pid?: number;
  version?: string;
  connections?: number;
  overlays?: number;
}
