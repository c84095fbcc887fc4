/**
 * The Language Model Tool `readmany_read_many_files`: tool input → `ReadManyParams`,
 * `ReadManyResult` → tool result parts, and the tool object `vscode.lm.registerTool`
 * takes. The input schema lives in package.json (`contributes.languageModelTools`).
 *
 * Nothing here imports `vscode` at run time: the API is passed in, so unit tests use a
 * hand-written fake of it.
 */
import * as path from 'path';
import { fileURLToPath } from 'url';
import type * as vscode from 'vscode';
import { ERROR_CODES, type ReadManyParams, type ReadManyResult } from './protocol';

export const TOOL_NAME = 'readmany_read_many_files';

/** What a model sends: `ReadManyParams` as declared by the schema (VS Code validated it). */
export type ReadManyToolInput = ReadManyParams;

export class ToolInputError extends Error {}

/** Image types a chat model takes as image data; other attachments become a text note. */
export const MODEL_IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

const ENTRY_FIELDS = ['paths', 'files', 'include'] as const;

/**
 * Tool input → `readMany/read` params. Canonical fields (and any alias) pass through for
 * the server to validate (an unknown field comes back as -32602 naming it, for the model
 * to fix). Small slips are mended: null fields dropped, a single string where a list
 * goes, `files` entries given as plain paths.
 */
export function toReadManyParams(input: unknown): ReadManyParams {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    throw new ToolInputError('the input must be an object with at least one of paths, files, include, cursor, changes');
  }
  const params: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(input)) {
    if (value !== null && value !== undefined) params[key] = value;
  }
  for (const key of ['paths', 'files', 'include', 'exclude']) {
    if (typeof params[key] === 'string') params[key] = [params[key]];
  }
  if (Array.isArray(params.files)) {
    params.files = params.files.map((f: unknown) => (typeof f === 'string' ? { path: f } : f));
  }
  const hasEntries = ENTRY_FIELDS.some((key) => Array.isArray(params[key]) && (params[key] as unknown[]).length > 0);
  const hasCursor = typeof params.cursor === 'string' && params.cursor !== '';
  const hasChanges = params.changes !== null && typeof params.changes === 'object' && !Array.isArray(params.changes);
  if (!hasEntries && !hasCursor && !hasChanges) {
    throw new ToolInputError('nothing to read: give at least one of paths, files, include, changes (or the cursor of an earlier answer)');
  }
  return params as ReadManyParams;
}

/** The tool's own budgets (settings `readmany.toolMaxTotalTokens` / `toolMaxTotalChars`):
 * o200k tokens of the whole answer text, characters of file content. */
export interface ToolBudgets {
  maxTotalTokens: number;
  maxTotalChars: number;
}

/** The tool's packing where the model set none: what does not fit comes as outlines
 * (PROTOCOL §4 "Outlines"); the CLI and LSP keep `auto`. */
export const TOOL_PACKING = 'outlines';

/** The smallest `maxTotalTokens` the server accepts (PROTOCOL §3). */
export const MIN_TOTAL_TOKENS = 1000;
/** The smallest `maxAnswerChars` the server accepts (PROTOCOL §3). */
export const MIN_ANSWER_CHARS = 4000;

/**
 * `params` with the tool's budgets where the model set none of its own (any spelling):
 * `maxTotalTokens` is VS Code's `tokenBudget` for this call when it gives one (the server
 * counts with the same o200k counter; at least `MIN_TOTAL_TOKENS`), else
 * `budgets.maxTotalTokens`; `maxTotalChars` is `budgets.maxTotalChars`, and so is
 * `maxAnswerChars` (the whole text) when VS Code gives no token budget and the model asks
 * for no more than the budgets; `packing` is `TOOL_PACKING`. Beside a cursor
 * they change nothing (the server answers the cursor's request with its first page's
 * budgets), and they keep a request sent with its cursor the same request.
 */
export function withToolBudgets(params: ReadManyParams, budgets: ToolBudgets, tokenBudget?: number): ReadManyParams {
  const out: Record<string, unknown> = { ...params };
  if (!('maxTotalTokens' in out) && !('max_total_tokens' in out)) {
    const fromHost = tokenBudget !== undefined && Number.isFinite(tokenBudget) && tokenBudget > 0;
    out.maxTotalTokens = fromHost ? Math.max(MIN_TOTAL_TOKENS, Math.floor(tokenBudget)) : budgets.maxTotalTokens;
  }
  if (!('maxTotalChars' in out) && !('max_total_chars' in out)) out.maxTotalChars = budgets.maxTotalChars;
  // The whole text within maxTotalChars too (framing and notices included), unless the
  // host gave a token budget or the model asked for more than the budgets.
  const own = (name: string, snake: string): unknown => out[name] ?? out[snake];
  const asksMore =
    (typeof own('maxTotalChars', 'max_total_chars') === 'number' && (own('maxTotalChars', 'max_total_chars') as number) > budgets.maxTotalChars) ||
    (typeof own('maxTotalTokens', 'max_total_tokens') === 'number' && (own('maxTotalTokens', 'max_total_tokens') as number) > budgets.maxTotalTokens);
  const fromHost = tokenBudget !== undefined && Number.isFinite(tokenBudget) && tokenBudget > 0;
  if (!fromHost && !asksMore && !('maxAnswerChars' in out) && !('max_answer_chars' in out)) {
    out.maxAnswerChars = Math.max(MIN_ANSWER_CHARS, budgets.maxTotalChars);
  }
  if (!('packing' in out)) out.packing = TOOL_PACKING;
  return out as ReadManyParams;
}

/** The constructors of the parts a tool result holds (a subset of the `vscode` API).
 * `LanguageModelDataPart` is final from VS Code 1.106; older hosts get text notes. */
export interface ToolPartsApi {
  LanguageModelTextPart: new (value: string) => unknown;
  LanguageModelDataPart?: { image(data: Uint8Array, mime: string): unknown };
}

function decodeBase64(data: string): Uint8Array {
  const buffer = Buffer.from(data, 'base64');
  return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
}

/** `llmContent` as a text part, then each attachment: a label and the image as a data
 * part where the host has them, else a note saying why it is not shown. */
export function toToolResultParts(result: ReadManyResult, api: ToolPartsApi): unknown[] {
  const parts: unknown[] = [new api.LanguageModelTextPart(result.llmContent)];
  const dataPart = api.LanguageModelDataPart;
  for (const attachment of result.attachments ?? []) {
    const bytes = decodeBase64(attachment.data);
    const label = `${attachment.path} (${attachment.mimeType}, ${bytes.byteLength} bytes)`;
    if (dataPart && MODEL_IMAGE_TYPES.has(attachment.mimeType)) {
      parts.push(new api.LanguageModelTextPart(`[Attachment ${label}: the image follows.]`));
      parts.push(dataPart.image(bytes, attachment.mimeType));
    } else {
      const why = dataPart
        ? 'this type cannot be passed to the model as data'
        : 'this VS Code version cannot pass images to tools (1.106 or newer can)';
      parts.push(new api.LanguageModelTextPart(`[Attachment ${label} not shown: ${why}.]`));
    }
  }
  return parts;
}

/** A JSON-RPC error (vscode-jsonrpc `ResponseError`) or any other failure → the message a
 * model reads as the tool's error. */
export function describeError(error: unknown): string {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  const message = typeof e?.message === 'string' ? e.message : String(error);
  if (e?.code === ERROR_CODES.invalidParams) return `readmany refused the input (${message}); fix that field and call again`;
  if (e?.code === ERROR_CODES.requestCancelled) return 'the read was cancelled';
  return `readmany could not answer: ${message}`;
}

export interface WorkspaceFolderLike {
  name: string;
  uri: { fsPath: string; toString(): string };
}

function normalize(p: string, platform: string): string {
  const api = platform === 'win32' ? path.win32 : path.posix;
  const resolved = api.resolve(p);
  return platform === 'win32' ? resolved.toLowerCase() : resolved;
}

/** Whether `root` (a folder name, path or `file:` URI) is a workspace folder or inside one. */
export function isWorkspaceRoot(root: string, folders: readonly WorkspaceFolderLike[], platform: string = process.platform): boolean {
  if (folders.some((f) => f.name === root || f.uri.toString() === root)) return true;
  let fsPath = root;
  if (root.startsWith('file:')) {
    try {
      fsPath = fileURLToPath(root);
    } catch {
      return false;
    }
  }
  const api = platform === 'win32' ? path.win32 : path.posix;
  if (!api.isAbsolute(fsPath)) return false;
  const target = normalize(fsPath, platform);
  return folders.some((f) => {
    const rel = api.relative(normalize(f.uri.fsPath, platform), target);
    return rel === '' || (!rel.startsWith('..') && !api.isAbsolute(rel));
  });
}

/** A short account of what a request reads, for the progress line in chat. */
export function describeRequest(params: ReadManyParams): string {
  const entries: string[] = [];
  for (const p of params.paths ?? []) entries.push(typeof p === 'string' ? p : p.path);
  for (const f of params.files ?? []) {
    if (typeof f.symbol === 'string') entries.push(`${f.path}#${f.symbol}`);
    else if (typeof f.enclosing === 'number') entries.push(`${f.path}:${f.enclosing}`);
    else entries.push(f.offset !== undefined || f.limit !== undefined ? `${f.path}:${f.offset ?? 1}${f.limit !== undefined ? `+${f.limit}` : ''}` : f.path);
  }
  entries.push(...(params.include ?? []));
  const since = params.changes ? `the changes since \`${params.changes.base ?? 'HEAD'}\`` : undefined;
  if (entries.length === 0) return since ?? (params.cursor ? 'the next page of an earlier read' : 'files');
  const shown = entries.slice(0, 3).map((e) => `\`${e}\``).join(', ');
  const named = entries.length > 3 ? `${shown} and ${entries.length - 3} more` : shown;
  return since ? `${since} in ${named}` : named;
}

/** The tool budgets when no setting says otherwise (the server's `toolMaxTotal*`). */
export const DEFAULT_TOOL_BUDGETS: ToolBudgets = { maxTotalTokens: 20000, maxTotalChars: 50000 };

export interface ReadManyToolDeps {
  read(params: ReadManyParams, token?: vscode.CancellationToken): Promise<ReadManyResult>;
  /** the current tool budgets (settings); default `DEFAULT_TOOL_BUDGETS` */
  budgets?(): ToolBudgets;
  workspaceFolders(): readonly WorkspaceFolderLike[];
  /** called after each answer (the status bar refreshes) */
  onDidRead?(result: ReadManyResult): void;
  platform?: string;
}

export type ToolApi = ToolPartsApi & {
  LanguageModelToolResult: new (content: unknown[]) => vscode.LanguageModelToolResult;
};

export function createReadManyTool(api: ToolApi, deps: ReadManyToolDeps): vscode.LanguageModelTool<ReadManyToolInput> {
  return {
    prepareInvocation(options) {
      let params: ReadManyParams;
      try {
        params = toReadManyParams(options.input);
      } catch {
        return { invocationMessage: 'Reading files' };
      }
      const prepared: vscode.PreparedToolInvocation = { invocationMessage: `Reading ${describeRequest(params)}` };
      const root = params.root;
      if (typeof root === 'string' && !isWorkspaceRoot(root, deps.workspaceFolders(), deps.platform)) {
        return {
          ...prepared,
          confirmationMessages: {
            title: 'Read files outside the workspace?',
            message: `The agent asks readmany to read ${describeRequest(params)} from \`${root}\`, which is not a workspace folder.`,
          },
        };
      }
      return prepared;
    },
    async invoke(options, token) {
      let params: ReadManyParams;
      try {
        const budgets = deps.budgets?.() ?? DEFAULT_TOOL_BUDGETS;
        params = withToolBudgets(toReadManyParams(options.input), budgets, options.tokenizationOptions?.tokenBudget);
      } catch (error) {
        throw new Error(`invalid input for ${TOOL_NAME}: ${(error as Error).message}`);
      }
      let result: ReadManyResult;
      try {
        result = await deps.read(params, token);
      } catch (error) {
        throw new Error(describeError(error));
      }
      deps.onDidRead?.(result);
      return new api.LanguageModelToolResult(toToolResultParts(result, api));
    },
  };
}
