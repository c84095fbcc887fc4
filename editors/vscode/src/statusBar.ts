/**
 * The status-bar item: the index state from `readMany/status` (files, watcher warnings,
 * warm or cold), refreshed every `readmany.statusRefreshSeconds`, after each read, and
 * on demand (clicking it runs "Read Many Files: Refresh Status").
 */
import type * as vscode from 'vscode';
import { describeCommand, type ServerCommand } from './discovery';
import type { StatusResult } from './protocol';

export type ServerState = 'stopped' | 'starting' | 'running' | 'notFound' | 'failed';

export interface StatusInput {
  state: ServerState;
  server?: ServerCommand;
  status?: StatusResult;
  /** why the server is not running */
  error?: string;
  /** seconds since this window's connection started (tells a warm daemon from a cold one) */
  connectedSeconds?: number;
}

export interface StatusView {
  text: string;
  /** markdown */
  tooltip: string;
  severity: 'ok' | 'warning' | 'error';
  /** starting or indexing: worth asking again soon */
  busy?: boolean;
}

const number = new Intl.NumberFormat('en-US');

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const min = Math.floor(s / 60);
  if (min < 60) return `${min} min`;
  const h = Math.floor(min / 60);
  if (h < 24) return `${h} h ${min % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

function cell(value: string): string {
  return value.replace(/\|/g, '\\|');
}

function serverLine(server: ServerCommand | undefined): string {
  if (!server) return '';
  return `Server: \`${describeCommand(server.command, server.args)}\` (found by ${server.source})`;
}

/** Every warning the status reports: the watchers' and each root's. */
export function statusWarnings(status: StatusResult): string[] {
  const out = [...(status.watcher?.warnings ?? [])];
  for (const root of status.roots) {
    for (const w of root.warnings ?? []) out.push(`${root.name}: ${w}`);
    if (root.error) out.push(`${root.name}: ${root.error}`);
  }
  return out;
}

/** Status-bar text and tooltip for the server state and its last `readMany/status`. */
export function describeStatus(input: StatusInput): StatusView {
  const { state, server, status } = input;
  if (state === 'notFound') {
    return {
      text: '$(error) readmany',
      tooltip: `**readmany server not found.** ${input.error ?? ''}\n\nClick to retry; the output channel "Read Many Files" shows each place looked at.`,
      severity: 'error',
    };
  }
  if (state === 'failed') {
    return {
      text: '$(error) readmany',
      tooltip: `**The readmany server failed:** ${input.error ?? 'see the output channel'}\n\n${serverLine(server)}\n\nClick to retry.`,
      severity: 'error',
    };
  }
  if (state === 'stopped') {
    return { text: '$(circle-slash) readmany', tooltip: 'The readmany server is stopped. Click to refresh, or run "Read Many Files: Restart Server".', severity: 'ok' };
  }
  if (state === 'starting' || !status) {
    return { text: '$(loading~spin) readmany', tooltip: `Starting the readmany server…\n\n${serverLine(server)}`, severity: 'ok', busy: true };
  }

  const warnings = statusWarnings(status);
  const cold = status.roots.filter((r) => !r.indexed && !r.error);
  const lines: string[] = [];
  const kind = server?.mode === 'lsp' ? 'shared daemon (`readmany lsp`)' : 'server of this window (`readmany serve --stdio`)';
  const facts = [kind];
  if (status.pid !== undefined) facts.push(`pid ${status.pid}`);
  if (status.uptime !== undefined) facts.push(`up ${formatDuration(status.uptime)}`);
  if (status.connections !== undefined) facts.push(`${status.connections} connection${status.connections === 1 ? '' : 's'}`);
  lines.push(`**readmany ${status.version ?? ''}** — ${facts.join(', ')}`);
  if (cold.length > 0) {
    lines.push(`Index: **cold** — indexing ${cold.map((r) => r.name).join(', ')}…`);
  } else if (status.roots.length === 0) {
    lines.push('Index: no workspace folder open');
  } else {
    lines.push('Index: **warm** — every folder is in memory; reads need no walk');
  }
  if (server?.mode === 'lsp' && status.uptime !== undefined && input.connectedSeconds !== undefined) {
    lines.push(
      status.uptime > input.connectedSeconds + 2
        ? `Daemon: was already warm when this window connected (running ${formatDuration(status.uptime)})`
        : 'Daemon: started cold by this window',
    );
  }
  if (status.roots.length > 0) {
    const rows = ['| folder | files | watcher |', '|---|---:|---|'];
    for (const r of status.roots) {
      const files = r.files === null ? (r.error ? 'error' : 'indexing') : number.format(r.files);
      rows.push(`| ${cell(r.name)} | ${files} | ${cell(r.watcher?.state ?? 'off')} |`);
    }
    lines.push(rows.join('\n'));
  }
  if (status.cache) {
    lines.push(`Cache: ${formatBytes(status.cache.bytes)}, hit rate ${Math.round(status.cache.hitRate * 100)} %`);
  }
  if (warnings.length > 0) {
    const items = warnings.slice(0, 10).map((w) => `- ${w}`);
    if (warnings.length > 10) items.push(`- … and ${warnings.length - 10} more`);
    lines.push(`**${warnings.length} warning${warnings.length === 1 ? '' : 's'}:**\n${items.join('\n')}`);
  }
  if (server) lines.push(serverLine(server));
  lines.push('Click to refresh.');

  const count = number.format(status.fileCount);
  let text: string;
  let severity: StatusView['severity'] = 'ok';
  if (cold.length > 0) {
    text = `$(loading~spin) readmany: indexing${status.fileCount ? ` ${count}` : ''}`;
  } else if (warnings.length > 0) {
    text = `$(warning) readmany ${count}`;
    severity = 'warning';
  } else {
    text = `$(zap) readmany ${count}`;
  }
  return { text, tooltip: lines.join('\n\n'), severity, ...(cold.length > 0 ? { busy: true } : {}) };
}

export type StatusBarApi = {
  window: Pick<typeof vscode.window, 'createStatusBarItem'>;
  StatusBarAlignment: typeof vscode.StatusBarAlignment;
  MarkdownString: typeof vscode.MarkdownString;
  ThemeColor: typeof vscode.ThemeColor;
};

export interface Timers {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** While the server starts or indexes, the item asks again after this long. */
export const BUSY_REFRESH_MS = 1000;

export const REFRESH_COMMAND = 'readmany.refreshStatus';

/** Owns the status-bar item; `refresh()` asks `fetch` for the latest input and shows it. */
export class StatusBar {
  private readonly item: vscode.StatusBarItem;
  private timer: unknown;
  private soon: unknown;
  private pending: Promise<void> | undefined;
  private disposed = false;

  constructor(
    private readonly api: StatusBarApi,
    private readonly fetch: () => Promise<StatusInput>,
    // unref: a status refresh never keeps a process alive (the tests' node, say).
    private readonly timers: Timers = {
      setInterval: (fn, ms) => setInterval(fn, ms).unref(),
      clearInterval: (h) => clearInterval(h as ReturnType<typeof setInterval>),
      setTimeout: (fn, ms) => setTimeout(fn, ms).unref(),
      clearTimeout: (h) => clearTimeout(h as ReturnType<typeof setTimeout>),
    },
  ) {
    this.item = api.window.createStatusBarItem('readmany.status', api.StatusBarAlignment.Right, 100);
    this.item.name = 'Read Many Files';
    this.item.command = REFRESH_COMMAND;
    this.show({ state: 'starting' });
    this.item.show();
  }

  /** Refresh every `seconds` (0: only on demand). */
  setPeriod(seconds: number): void {
    if (this.timer !== undefined) this.timers.clearInterval(this.timer);
    this.timer = undefined;
    if (seconds > 0 && !this.disposed) {
      this.timer = this.timers.setInterval(() => void this.refresh(), seconds * 1000);
    }
  }

  /** Fetch and show; concurrent calls share one fetch. */
  refresh(): Promise<void> {
    if (this.disposed) return Promise.resolve();
    this.pending ??= this.fetch()
      .then((input) => this.show(input))
      .catch((error: unknown) => this.show({ state: 'failed', error: String((error as Error)?.message ?? error) }))
      .finally(() => {
        this.pending = undefined;
      });
    return this.pending;
  }

  show(input: StatusInput): void {
    if (this.disposed) return;
    const view = describeStatus(input);
    this.item.text = view.text;
    this.item.tooltip = new this.api.MarkdownString(view.tooltip);
    this.item.backgroundColor =
      view.severity === 'error'
        ? new this.api.ThemeColor('statusBarItem.errorBackground')
        : view.severity === 'warning'
          ? new this.api.ThemeColor('statusBarItem.warningBackground')
          : undefined;
    if (view.busy && this.soon === undefined) {
      this.soon = this.timers.setTimeout(() => {
        this.soon = undefined;
        void this.refresh();
      }, BUSY_REFRESH_MS);
    }
  }

  get text(): string {
    return this.item.text;
  }

  dispose(): void {
    this.disposed = true;
    this.setPeriod(0);
    if (this.soon !== undefined) this.timers.clearTimeout(this.soon);
    this.soon = undefined;
    this.item.dispose();
  }
}
