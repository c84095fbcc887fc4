/**
 * A stub LSP server on stdio (vscode-jsonrpc): answers `initialize`, `shutdown` and
 * every other request with `{ params }`, the params exactly as they arrived on the wire,
 * so a test sees what a client really sent.
 */
import { createMessageConnection, StreamMessageReader, StreamMessageWriter } from 'vscode-jsonrpc/node';

const connection = createMessageConnection(new StreamMessageReader(process.stdin), new StreamMessageWriter(process.stdout));
connection.onRequest((method: string, params: unknown) => {
  if (method === 'initialize') return { capabilities: {}, serverInfo: { name: 'stub' } };
  if (method === 'shutdown') return null;
  return { params: params === undefined ? null : params };
});
connection.onNotification('exit', () => process.exit(0));
connection.listen();
