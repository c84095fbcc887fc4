/**
 * The real vscode-languageclient (what the extension bundles), started by
 * `createLanguageClient` against a stub server that echoes each request's params as they
 * arrived: a request must carry its params object, with or without a cancellation token
 * (vscode-languageclient sends `(method, params, undefined)` as the array `[params, null]`).
 */
import { fake, withStandIns } from '../fake/vscodeModule';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type * as vscode from 'vscode';
import { createLanguageClient } from '../../src/languageClient';
import type { LspClient } from '../../src/server';
import { CancellationTokenSource } from '../fake/vscode';

describe('createLanguageClient (the real vscode-languageclient)', () => {
  let client: LspClient;

  before(async () => {
    const output = withStandIns(fake.vscode.window.createOutputChannel('Read Many Files') as unknown as Record<string, unknown>, 'output');
    client = createLanguageClient(
      { command: process.execPath, args: [path.join(__dirname, '..', 'fake', 'stubServer.js')], source: 'PATH', version: 'stub', mode: 'stdio' },
      { initializationOptions: () => ({}), output: output as unknown as vscode.LogOutputChannel, cwd: undefined },
    );
    await client.start();
  });

  after(async () => {
    await client.stop();
  });

  test('a request without a token sends its params object', async () => {
    const params = { paths: ['a.txt', 'src/'], maxTotalFiles: 3 };
    assert.deepEqual(await client.sendRequest('readMany/read', params), { params });
    assert.deepEqual(await client.sendRequest('readMany/read', params, undefined), { params });
  });

  test('a request with a token sends its params object', async () => {
    const params = { paths: ['b.txt'] };
    const source = new CancellationTokenSource();
    assert.deepEqual(await client.sendRequest('readMany/read', params, source.token), { params });
  });

  test('an empty params object stays an object', async () => {
    assert.deepEqual(await client.sendRequest('readMany/status', {}), { params: {} });
  });
});
