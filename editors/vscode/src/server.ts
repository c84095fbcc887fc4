/**
 * The server's lifecycle: discover, start, stop, restart (one at a time, in order), and
 * requests that wait for a pending start. The LSP client is behind `LspClient`, so tests
 * run this with a client over vscode-jsonrpc or a scripted one; `languageClient.ts` makes
 * the real vscode-languageclient one.
 */
import { NOT_FOUND_HELP, type ServerCommand } from './discovery';
import type { ServerState } from './statusBar';

/** What the extension needs of an LSP client (a subset of vscode-languageclient's). */
export interface LspClient {
  start(): Promise<void>;
  /** shutdown + exit */
  stop(): Promise<void>;
  sendRequest<R>(method: string, params: unknown, token?: CancellationTokenLike): Promise<R>;
  sendNotification(method: string, params: unknown): Promise<void>;
  /** `listener` runs when the server goes away without `stop()` (it crashed for good) */
  onUnexpectedStop?(listener: () => void): void;
}

export interface CancellationTokenLike {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => unknown): unknown;
}

export interface Logger {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export interface ServerManagerDeps {
  discover(): Promise<ServerCommand | undefined>;
  createClient(server: ServerCommand): LspClient;
  log: Logger;
  now?: () => number;
}

export class NotRunningError extends Error {}

export class ServerManager {
  state: ServerState = 'stopped';
  server: ServerCommand | undefined;
  error: string | undefined;
  /** `now()` when the running client connected */
  connectedAt: number | undefined;
  private client: LspClient | undefined;
  private queue: Promise<void> = Promise.resolve();
  private readonly listeners = new Set<(state: ServerState) => void>();

  constructor(private readonly deps: ServerManagerDeps) {}

  onDidChangeState(listener: (state: ServerState) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  start(): Promise<void> {
    return this.enqueue(() => this.doStart());
  }

  stop(): Promise<void> {
    return this.enqueue(() => this.doStop());
  }

  restart(): Promise<void> {
    return this.enqueue(async () => {
      this.deps.log.info('Restarting the readmany server');
      await this.doStop();
      await this.doStart();
    });
  }

  /** Send a request once any pending start/restart is done. */
  async request<R>(method: string, params: unknown, token?: CancellationTokenLike): Promise<R> {
    await this.queue;
    const client = this.client;
    if (!client) throw new NotRunningError(this.notRunningMessage());
    return client.sendRequest<R>(method, params, token);
  }

  /** The server the last start found (after any pending start/restart), or undefined
   * when none was found; a server that failed to start counts as found. */
  async found(): Promise<ServerCommand | undefined> {
    await this.queue;
    return this.server;
  }

  async notify(method: string, params: unknown): Promise<void> {
    await this.queue;
    await this.client?.sendNotification(method, params);
  }

  notRunningMessage(): string {
    if (this.state === 'notFound') return NOT_FOUND_HELP;
    if (this.state === 'failed') return `the readmany server is not running (${this.error ?? 'it failed to start'}); see the "Read Many Files" output`;
    return 'the readmany server is not running; run "Read Many Files: Restart Server"';
  }

  private enqueue(task: () => Promise<void>): Promise<void> {
    const next = this.queue.then(task);
    this.queue = next.catch((error: unknown) => {
      this.deps.log.error(`readmany: ${String((error as Error)?.message ?? error)}`);
    });
    return this.queue;
  }

  private setState(state: ServerState): void {
    this.state = state;
    for (const listener of [...this.listeners]) listener(state);
  }

  private async doStart(): Promise<void> {
    this.error = undefined;
    this.setState('starting');
    let server: ServerCommand | undefined;
    try {
      server = await this.deps.discover();
    } catch (error) {
      this.deps.log.error(`looking for the server failed: ${String((error as Error)?.message ?? error)}`);
    }
    if (!server) {
      this.server = undefined;
      this.error = NOT_FOUND_HELP;
      this.setState('notFound');
      return;
    }
    this.server = server;
    const client = this.deps.createClient(server);
    try {
      await client.start();
    } catch (error) {
      this.error = String((error as Error)?.message ?? error);
      this.deps.log.error(`the readmany server did not start: ${this.error}`);
      await client.stop().catch(() => undefined);
      this.setState('failed');
      return;
    }
    this.client = client;
    this.connectedAt = (this.deps.now ?? Date.now)();
    client.onUnexpectedStop?.(() => {
      if (this.client !== client) return;
      this.client = undefined;
      this.error = 'the server stopped unexpectedly';
      this.deps.log.error('the readmany server stopped unexpectedly; "Read Many Files: Restart Server" starts it again');
      this.setState('failed');
    });
    this.setState('running');
  }

  private async doStop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.connectedAt = undefined;
    if (client) {
      try {
        await client.stop();
      } catch (error) {
        this.deps.log.warn(`stopping the server: ${String((error as Error)?.message ?? error)}`);
      }
    }
    this.setState('stopped');
  }
}
