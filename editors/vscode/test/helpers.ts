/** Shared helpers of the unit and end-to-end tests. */
import * as fs from 'fs';
import * as path from 'path';
import type { LspClient } from '../src/server';

/** The folder of this npm package (tests run compiled from out/test/…). */
export function packageRoot(): string {
  let dir = __dirname;
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (fs.existsSync(file) && JSON.parse(fs.readFileSync(file, 'utf8')).name === 'readmany-vscode') return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('package.json of readmany-vscode not found above ' + __dirname);
    dir = parent;
  }
}

export type Json = any;

export function readManifest(): Json {
  return JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8'));
}

/** A scripted LSP client: answers requests from `handlers`, records everything. */
export class ScriptedClient implements LspClient {
  started = 0;
  stopped = 0;
  requests: { method: string; params: unknown }[] = [];
  notifications: { method: string; params: unknown }[] = [];
  private stopListener: (() => void) | undefined;

  constructor(
    readonly handlers: Record<string, (params: unknown) => unknown> = {},
    private readonly startError?: Error,
  ) {}

  async start(): Promise<void> {
    this.started += 1;
    if (this.startError) throw this.startError;
  }

  async stop(): Promise<void> {
    this.stopped += 1;
  }

  async sendRequest<R>(method: string, params: unknown): Promise<R> {
    this.requests.push({ method, params });
    const handler = this.handlers[method];
    if (!handler) throw Object.assign(new Error(`unhandled method ${method}`), { code: -32601 });
    return (await handler(params)) as R;
  }

  async sendNotification(method: string, params: unknown): Promise<void> {
    this.notifications.push({ method, params });
  }

  onUnexpectedStop(listener: () => void): void {
    this.stopListener = listener;
  }

  /** simulate the server dying */
  crash(): void {
    this.stopListener?.();
  }
}

/** Wait until `predicate` holds (polls the event loop, bounded). */
export async function until(predicate: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}
