import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type * as vscode from 'vscode';
import { COMMANDS, ReadManyController, type ClientOptions } from '../../src/controller';
import type { DiscoveryHost, ServerCommand } from '../../src/discovery';
import type { ReadManyResult, StatusResult } from '../../src/protocol';
import { TOOL_NAME } from '../../src/tool';
import { asVscode, createFakeVscode, LanguageModelTextPart, LanguageModelToolResult, Uri, type FakeOptions } from '../fake/vscode';
import { readManifest, ScriptedClient, until } from '../helpers';

const READ: ReadManyResult = {
  llmContent: '--- a.txt ---\nhello\n\n--- End of content ---',
  attachments: [],
  returnDisplay: '',
  summary: { matched: 1, read: 1, truncated: 0, omitted: 0, skipped: 0, errors: 0, unchanged: 0, totalChars: 6, estimatedTokens: 2 },
  files: [{ path: 'a.txt', status: 'ok' }],
  clock: '1:0',
};
const STATUS: StatusResult = {
  roots: [{ root: '/w/app', name: 'app', files: 3, indexed: true, watcher: { state: 'running', warnings: [] } }],
  fileCount: 3,
  uptime: 100,
  pid: 1,
  version: '0.1.0',
};

/** A machine with `readmany` on PATH at /usr/bin (and python3 beside it). */
const host = (workspaceFolder: string | undefined): DiscoveryHost => ({
  platform: 'linux',
  env: { PATH: '/usr/bin' },
  home: '/home/me',
  ...(workspaceFolder ? { workspaceFolder } : {}),
  isExecutableFile: (f) => f === '/usr/bin/readmany' || f === '/usr/bin/python3',
  version: async () => ({ ok: true, version: 'readmany 0.1.0' }),
});

function setup(options: FakeOptions = {}) {
  const fake = createFakeVscode({ folders: ['/w/app'], ...options });
  const clients: { server: ServerCommand; options: ClientOptions; client: ScriptedClient }[] = [];
  const timers: { ms: number }[] = [];
  const controller = new ReadManyController(asVscode(fake), {
    createClient: (server, opts) => {
      const client = new ScriptedClient({ 'readMany/read': () => READ, 'readMany/status': () => STATUS });
      clients.push({ server, options: opts, client });
      return client;
    },
    host,
    timers: {
      setInterval: (_fn, ms) => {
        const t = { ms };
        timers.push(t);
        return t;
      },
      clearInterval: () => {},
      setTimeout: () => undefined,
      clearTimeout: () => {},
    },
    now: () => 0,
  });
  return { fake, controller, clients, timers, output: () => fake.recorded.outputs[0]?.lines ?? [] };
}

describe('ReadManyController', () => {
  test('registers every command package.json contributes, and the tool under its contributed name', () => {
    const { fake, controller } = setup();
    const manifest = readManifest();
    const contributed = manifest.contributes.commands.map((c: { command: string }) => c.command).sort();
    assert.deepEqual([...fake.commands.keys()].sort(), contributed);
    assert.deepEqual(Object.values(COMMANDS).sort(), contributed);
    assert.deepEqual([...fake.tools.keys()], [manifest.contributes.languageModelTools[0].name]);
    assert.deepEqual([...fake.tools.keys()], [TOOL_NAME]);
    controller.dispose();
    assert.equal(fake.commands.size, 0);
    assert.equal(fake.tools.size, 0);
    assert.equal(fake.configurationListeners, 0);
    assert.ok(fake.recorded.statusItems[0]?.disposed);
  });

  test('start: discovery logged to the output channel, the client gets the settings, the status bar shows the index', async () => {
    const { fake, controller, clients, output, timers } = setup({ settings: { 'read.maxTotalFiles': 7 } });
    await controller.start();
    assert.equal(fake.recorded.outputs[0]?.name, 'Read Many Files');
    assert.ok(output().includes('[info] 3. PATH: /usr/bin/readmany is readmany 0.1.0; starting /usr/bin/readmany lsp'), output().join('\n'));
    assert.equal(clients.length, 1);
    assert.deepEqual(clients[0]?.server.args, ['lsp']);
    assert.equal(clients[0]?.options.cwd, '/w/app');
    assert.equal(clients[0]?.options.initializationOptions().maxTotalFiles, 7);
    assert.equal(fake.recorded.statusItems[0]?.text, '$(zap) readmany 3');
    assert.deepEqual(timers, [{ ms: 30000 }]);
  });

  test('the tool reads through the server and returns llmContent as a text part', async () => {
    const { fake, controller, clients } = setup();
    await controller.start();
    const tool = fake.tools.get(TOOL_NAME) as vscode.LanguageModelTool<unknown>;
    const out = (await tool.invoke({ input: { paths: ['a.txt'] } } as vscode.LanguageModelToolInvocationOptions<unknown>, undefined as unknown as vscode.CancellationToken)) as unknown as LanguageModelToolResult;
    assert.deepEqual((out.content[0] as LanguageModelTextPart).value, READ.llmContent);
    const sent = () => clients[0]?.client.requests.filter((r) => r.method === 'readMany/read').at(-1)?.params;
    // the tool's budgets (readmany.toolMaxTotal*), then a changed setting at the next call
    assert.deepEqual(sent(), { paths: ['a.txt'], maxTotalTokens: 20000, maxTotalChars: 50000, maxAnswerChars: 50000, packing: 'outlines' });
    fake.changeSettings({ toolMaxTotalTokens: 4000, toolMaxTotalChars: 9000 });
    await new Promise((resolve) => setImmediate(resolve));
    await tool.invoke({ input: { paths: ['a.txt'] } } as vscode.LanguageModelToolInvocationOptions<unknown>, undefined as unknown as vscode.CancellationToken);
    assert.deepEqual(sent(), { paths: ['a.txt'], maxTotalTokens: 4000, maxTotalChars: 9000, maxAnswerChars: 9000, packing: 'outlines' });
  });

  test('commands from the Explorer and the palette', async () => {
    const { fake, controller } = setup({ inputs: ['*.txt'] });
    await controller.start();
    await fake.vscode.commands.executeCommand(COMMANDS.copyToClipboard, Uri.file('/w/app/a.txt'), [Uri.file('/w/app/a.txt')]);
    await fake.vscode.commands.executeCommand(COMMANDS.openInEditor);
    assert.deepEqual(fake.recorded.clipboard, [READ.llmContent]);
    assert.deepEqual(fake.recorded.documents, [{ content: READ.llmContent, language: 'plaintext' }]);
  });

  test('a changed server setting is sent as workspace/didChangeConfiguration, no restart', async () => {
    const { fake, controller, clients, output } = setup();
    await controller.start();
    fake.changeSettings({ 'read.maxTotalFiles': 50, denyPatterns: ['*.secret'] });
    await until(() => (clients[0]?.client.notifications.length ?? 0) > 0, 'the notification');
    const sent = clients[0]?.client.notifications[0];
    assert.equal(sent?.method, 'workspace/didChangeConfiguration');
    const settings = (sent?.params as { settings: { readmany: Record<string, unknown> } }).settings.readmany;
    assert.equal(settings.maxTotalFiles, 50);
    assert.deepEqual(settings.denyPatterns, ['*.secret']);
    assert.equal(clients.length, 1);
    assert.ok(output().includes('[info] readmany settings changed: sending workspace/didChangeConfiguration'));
  });

  test('a changed launch setting restarts the server with the new command', async () => {
    const { fake, controller, clients } = setup();
    await controller.start();
    fake.changeSettings({ shared: false });
    await until(() => clients.length === 2 && controller.server.state === 'running', 'the restart');
    assert.equal(clients[0]?.client.stopped, 1);
    assert.deepEqual(clients[1]?.server.args, ['serve', '--stdio']);
    assert.equal(clients[1]?.client.notifications.length, 0);
  });

  test('the status refresh period follows the setting', async () => {
    const { fake, controller, timers } = setup();
    await controller.start();
    fake.changeSettings({ statusRefreshSeconds: 5 });
    assert.deepEqual(timers, [{ ms: 30000 }, { ms: 5000 }]);
  });

  test('Restart Server and the status item', async () => {
    const { fake, controller, clients } = setup();
    await controller.start();
    await fake.vscode.commands.executeCommand(COMMANDS.restartServer);
    assert.equal(clients.length, 2);
    await fake.vscode.commands.executeCommand(COMMANDS.refreshStatus);
    assert.equal(clients.length, 2, 'a running server is only asked for its status');
    assert.equal(fake.recorded.statusItems[0]?.text, '$(zap) readmany 3');
  });

  test('no server found: error in the status bar and the output; clicking retries', async () => {
    const fake = createFakeVscode({ folders: ['/w/app'] });
    const controller = new ReadManyController(asVscode(fake), {
      createClient: () => assert.fail('no client without a server'),
      host: () => ({ ...host(undefined), isExecutableFile: () => false }),
    });
    try {
      await controller.start();
      assert.equal(fake.recorded.statusItems[0]?.text, '$(error) readmany');
      const lines = fake.recorded.outputs[0]?.lines ?? [];
      assert.match(lines.at(-1) ?? '', /^\[error\] readmany was not found\. Install the readmany-daemon Python package/);
      await fake.vscode.commands.executeCommand(COMMANDS.refreshStatus);
      assert.equal(fake.recorded.outputs[0]?.shown, 1);
      assert.equal(lines.filter((l) => l.startsWith('[info] Looking for the readmany server')).length, 2);
      await assert.rejects(controller.publicApi.read({ paths: ['a'] }), /readmany was not found/);
    } finally {
      controller.dispose();
    }
  });

  test('a host without the language model API still gets the commands', () => {
    const { fake, output } = setup({ lm: false });
    assert.equal(fake.tools.size, 0);
    assert.ok(fake.commands.has(COMMANDS.copyToClipboard));
    assert.match(output().join('\n'), /no language model tools API/);
  });

  test('publicApi: read and status for other extensions', async () => {
    const { controller } = setup();
    await controller.start();
    assert.deepEqual(await controller.publicApi.read({ paths: ['a.txt'] }), READ);
    assert.deepEqual(await controller.publicApi.status(), STATUS);
    await controller.stop();
    assert.equal(controller.server.state, 'stopped');
  });
});
