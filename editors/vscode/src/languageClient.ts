/** The real `LspClient`: vscode-languageclient starting the server as a child process
 * speaking LSP on stdio. Open documents are synced (they are overlays that win over
 * disk, PROTOCOL §6); workspace folders follow the window. */
import { LanguageClient, State, type LanguageClientOptions, type ServerOptions } from 'vscode-languageclient/node';
import type { ClientOptions } from './controller';
import type { ServerCommand } from './discovery';
import type { LspClient } from './server';
import { SECTION } from './settings';

export function createLanguageClient(server: ServerCommand, options: ClientOptions): LspClient {
  const serverOptions: ServerOptions = {
    command: server.command,
    args: server.args,
    // No `transport`: vscode-languageclient would append `--stdio` to the arguments.
    options: options.cwd !== undefined ? { cwd: options.cwd } : {},
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: 'file' }],
    outputChannel: options.output,
    initializationOptions: () => options.initializationOptions(),
    middleware: {
      workspace: {
        // The server may pull its settings (workspace/configuration): give it the same
        // typed object as initializationOptions, not the raw `readmany` section.
        configuration: (params, token, next) => {
          if (params.items.every((item) => item.section === SECTION)) {
            return params.items.map(() => options.initializationOptions());
          }
          return next(params, token);
        },
      },
    },
  };
  const client = new LanguageClient(SECTION, 'Read Many Files', serverOptions, clientOptions);
  let stopping = false;
  return {
    start: () => client.start(),
    stop: async () => {
      stopping = true;
      if (client.state !== State.Stopped) await client.stop(5000);
    },
    // vscode-languageclient's sendRequest(method, ...params) takes its arguments as a rest
    // list: `(method, params, undefined)` is two parameters, sent as the array
    // `[params, null]`. Pass the token only when there is one.
    sendRequest: <R>(method: string, params: unknown, token?: Parameters<typeof client.sendRequest>[2]) =>
      token === undefined ? client.sendRequest<R>(method, params) : client.sendRequest<R>(method, params, token),
    sendNotification: (method, params) => client.sendNotification(method, params),
    onUnexpectedStop: (listener) => {
      client.onDidChangeState((e) => {
        if (e.newState === State.Stopped && !stopping) listener();
      });
    },
  };
}
