/**
 * An `LspClient` over vscode-jsonrpc (the library under vscode-languageclient): starts
 * the real server as a child process and speaks LSP to it on stdio, as the editor does.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  createMessageConnection,
  StreamMessageReader,
  StreamMessageWriter,
  type CancellationToken,
  type MessageConnection,
} from 'vscode-jsonrpc/node';
import type { CancellationTokenLike, LspClient } from '../../src/server';

export interface JsonRpcClientOptions {
  env: NodeJS.ProcessEnv;
  cwd?: string | undefined;
  /** workspace folders (absolute paths) sent in initialize */
  folders: string[];
  initializationOptions(): Record<string, unknown>;
}

export class JsonRpcClient implements LspClient {
  process: ChildProcess | undefined;
  connection: MessageConnection | undefined;
  initializeResult: { capabilities: Record<string, unknown>; serverInfo?: { name: string; version?: string } } | undefined;
  readonly logMessages: { type: number; message: string }[] = [];
  readonly progress: unknown[] = [];
  stderr = '';
  exited: Promise<number | null> = Promise.resolve(null);
  private stopping = false;
  private stopListener: (() => void) | undefined;

  constructor(
    readonly command: string,
    readonly args: string[],
    private readonly options: JsonRpcClientOptions,
  ) {}

  async start(): Promise<void> {
    const child = spawn(this.command, this.args, { cwd: this.options.cwd, env: this.options.env, stdio: ['pipe', 'pipe', 'pipe'] });
    this.process = child;
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    void this.exited.then(() => {
      if (!this.stopping) this.stopListener?.();
    });
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    const connection = createMessageConnection(new StreamMessageReader(child.stdout!), new StreamMessageWriter(child.stdin!));
    this.connection = connection;
    connection.onRequest('window/workDoneProgress/create', () => null);
    connection.onRequest('client/registerCapability', () => null);
    connection.onRequest('workspace/configuration', (params: { items: unknown[] }) => params.items.map(() => this.options.initializationOptions()));
    connection.onNotification('window/logMessage', (params: { type: number; message: string }) => {
      this.logMessages.push(params);
    });
    connection.onNotification('$/progress', (params: unknown) => {
      this.progress.push(params);
    });
    connection.listen();
    this.initializeResult = await connection.sendRequest('initialize', {
      processId: process.pid,
      clientInfo: { name: 'readmany-vscode tests' },
      rootUri: null,
      capabilities: { window: { workDoneProgress: true }, workspace: { configuration: true, workspaceFolders: true } },
      workspaceFolders: this.options.folders.map((f) => ({ uri: pathToFileURL(f).href, name: path.basename(f) })),
      initializationOptions: this.options.initializationOptions(),
    });
    await connection.sendNotification('initialized', {});
  }

  sendRequest<R>(method: string, params: unknown, token?: CancellationTokenLike): Promise<R> {
    const connection = this.requireConnection();
    return token
      ? connection.sendRequest<R>(method, params, token as unknown as CancellationToken)
      : connection.sendRequest<R>(method, params);
  }

  async sendNotification(method: string, params: unknown): Promise<void> {
    await this.requireConnection().sendNotification(method, params);
  }

  onUnexpectedStop(listener: () => void): void {
    this.stopListener = listener;
  }

  /** shutdown + exit; the process must end by itself (10 s), else it is killed. Returns its exit code. */
  async stop(): Promise<void> {
    this.stopping = true;
    const connection = this.connection;
    if (!connection || !this.process) return;
    try {
      await connection.sendRequest('shutdown');
      await connection.sendNotification('exit');
    } finally {
      const timer = setTimeout(() => this.process?.kill('SIGKILL'), 10000);
      await this.exited;
      clearTimeout(timer);
      connection.dispose();
    }
  }

  /** Kill the process if a test failed before stop(). */
  kill(): void {
    if (this.process && this.process.exitCode === null && this.process.signalCode === null) this.process.kill('SIGKILL');
  }

  private requireConnection(): MessageConnection {
    if (!this.connection) throw new Error('not started');
    return this.connection;
  }
}
