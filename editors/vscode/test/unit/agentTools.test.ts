import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MCP_PROVIDER_ID, MCP_SERVER_LABEL, mcpServerArgs, mcpServerEnv, TOOL_CONTEXT_KEY } from '../../src/agentTools';
import { ReadManyController } from '../../src/controller';
import type { DiscoveryHost, ServerCommand } from '../../src/discovery';
import { DEFAULTS } from '../../src/settings';
import { TOOL_NAME } from '../../src/tool';
import { asVscode, createFakeVscode, McpStdioServerDefinition, type FakeOptions } from '../fake/vscode';
import { ScriptedClient, until } from '../helpers';

const onPath: ServerCommand = { command: '/usr/bin/readmany', args: ['lsp'], source: 'PATH', version: 'readmany 0.1.0', mode: 'lsp' };

describe('mcpServerArgs', () => {
  test('`mcp --root` for each folder of the window, in its order', () => {
    assert.deepEqual(mcpServerArgs(onPath, ['/w/app']), ['mcp', '--root', '/w/app']);
    assert.deepEqual(mcpServerArgs(onPath, ['/w/app', '/w/lib']), ['mcp', '--root', '/w/app', '--root', '/w/lib']);
  });

  test("an interpreter's leading arguments stay; the LSP mode's go", () => {
    const interpreter: ServerCommand = { ...onPath, command: '/usr/bin/python3', args: ['-m', 'readmany_daemon', 'lsp'], source: 'readmany.interpreter' };
    assert.deepEqual(mcpServerArgs(interpreter, ['/w/app']), ['-m', 'readmany_daemon', 'mcp', '--root', '/w/app']);
  });

  test('a window server of its own (readmany.shared off, Windows) answers without the shared daemon', () => {
    const stdio: ServerCommand = { ...onPath, args: ['serve', '--stdio'], mode: 'stdio' };
    assert.deepEqual(mcpServerArgs(stdio, ['/w/app']), ['mcp', '--root', '/w/app', '--no-daemon']);
  });

  test('no folder: no --root (the server follows the client’s roots)', () => {
    assert.deepEqual(mcpServerArgs(onPath, []), ['mcp']);
  });
});

describe('mcpServerEnv', () => {
  test('the server settings and the tool budgets, as READMANY_* values; lists left to the server when unset; the text in structuredContent (VS Code shows the model only that)', () => {
    assert.deepEqual(mcpServerEnv(DEFAULTS), {
      READMANY_IGNORE_FILE_NAMES: '[".readmanyignore"]',
      READMANY_MAX_FILE_BYTES: '20971520',
      READMANY_SHARE_OVERLAYS: 'true',
      READMANY_REDACT_SECRETS: 'true',
      READMANY_RANKING_INDEX: 'on-demand',
      READMANY_TOOL_MAX_TOTAL_TOKENS: '20000',
      READMANY_TOOL_MAX_TOTAL_CHARS: '50000',
      READMANY_MCP_STRUCTURED_TEXT: 'true',
    });
    const set = mcpServerEnv({ ...DEFAULTS, server: { ...DEFAULTS.server, denyPatterns: ['*.secret'], defaultExcludes: [], redactSecrets: false, rankingIndex: 'off' } });
    assert.equal(set.READMANY_DENY_PATTERNS, '["*.secret"]');
    assert.equal(set.READMANY_DEFAULT_EXCLUDES, '[]');
    assert.equal(set.READMANY_REDACT_SECRETS, 'false');
    assert.equal(set.READMANY_RANKING_INDEX, 'off');
  });
});

/** A machine with `readmany` on PATH, or none. */
const host =
  (found: boolean) =>
  (workspaceFolder: string | undefined): DiscoveryHost => ({
    platform: 'linux',
    env: { PATH: '/usr/bin' },
    home: '/home/me',
    ...(workspaceFolder ? { workspaceFolder } : {}),
    isExecutableFile: (f) => found && f === '/usr/bin/readmany',
    version: async () => ({ ok: true, version: 'readmany 0.1.0' }),
  });

function setup(options: FakeOptions = {}, found = true) {
  const fake = createFakeVscode({ folders: ['/w/app', '/w/lib'], mcp: true, ...options });
  const controller = new ReadManyController(asVscode(fake), {
    createClient: () => new ScriptedClient({}),
    host: host(found),
    timers: { setInterval: () => undefined, clearInterval: () => {}, setTimeout: () => undefined, clearTimeout: () => {} },
    now: () => 0,
  });
  const provider = () => fake.mcpProviders.get(MCP_PROVIDER_ID);
  const definitions = async () => (await provider()!.provideMcpServerDefinitions({})) as McpStdioServerDefinition[];
  return { fake, controller, provider, definitions, output: () => fake.recorded.outputs[0]?.lines ?? [] };
}

describe('AgentTools in the controller', () => {
  test('VS Code 1.101+: readmany mcp is registered for the workspace folders, and the tool is not', async () => {
    const { fake, controller, provider, definitions, output } = setup();
    assert.ok(provider(), 'the provider is registered under the contributed id');
    assert.equal(fake.tools.size, 0, 'one read tool for the model: the MCP one');
    assert.equal(fake.contextKeys.get(TOOL_CONTEXT_KEY), false);
    assert.ok(controller.agentTools.mcpRegistered && !controller.agentTools.toolRegistered);
    await controller.start();
    const [definition, ...rest] = await definitions();
    assert.deepEqual(rest, []);
    assert.ok(definition instanceof McpStdioServerDefinition);
    assert.equal(definition.label, MCP_SERVER_LABEL);
    assert.equal(definition.command, '/usr/bin/readmany');
    // two folders: one --root each, the first the server's default root
    assert.deepEqual(definition.args, ['mcp', '--root', '/w/app', '--root', '/w/lib']);
    assert.equal(definition.cwd?.fsPath, '/w/app');
    assert.equal(definition.version, 'readmany 0.1.0');
    assert.equal(definition.env.READMANY_TOOL_MAX_TOTAL_TOKENS, '20000');
    assert.ok(output().some((l) => l.includes('MCP server for VS Code') && l.endsWith('/usr/bin/readmany mcp --root /w/app --root /w/lib')), output().join('\n'));
    assert.ok(output().some((l) => l.includes(`${TOOL_NAME} not registered while the MCP server is`)));
    controller.dispose();
    assert.equal(fake.mcpProviders.size, 0);
  });

  test('readmany.mcpServer.alsoLanguageModelTool: both', () => {
    const { fake, controller } = setup({ settings: { 'mcpServer.alsoLanguageModelTool': true } });
    assert.ok(fake.mcpProviders.has(MCP_PROVIDER_ID));
    assert.deepEqual([...fake.tools.keys()], [TOOL_NAME]);
    assert.equal(fake.contextKeys.get(TOOL_CONTEXT_KEY), true);
    controller.dispose();
  });

  test('readmany.mcpServer.enabled false: the tool alone; switched at run time, the registrations follow', () => {
    const { fake, controller } = setup({ settings: { 'mcpServer.enabled': false } });
    assert.equal(fake.mcpProviders.size, 0);
    assert.deepEqual([...fake.tools.keys()], [TOOL_NAME]);
    assert.equal(fake.contextKeys.get(TOOL_CONTEXT_KEY), true);
    fake.changeSettings({ 'mcpServer.enabled': true });
    assert.ok(fake.mcpProviders.has(MCP_PROVIDER_ID));
    assert.equal(fake.tools.size, 0);
    assert.equal(fake.contextKeys.get(TOOL_CONTEXT_KEY), false);
    fake.changeSettings({ 'mcpServer.alsoLanguageModelTool': true });
    assert.deepEqual([...fake.tools.keys()], [TOOL_NAME]);
    fake.changeSettings({ 'mcpServer.enabled': false, 'mcpServer.alsoLanguageModelTool': false });
    assert.equal(fake.mcpProviders.size, 0);
    assert.deepEqual([...fake.tools.keys()], [TOOL_NAME]);
    controller.dispose();
  });

  test('a VS Code without the MCP API (before 1.101, or a fork): the tool, and a line saying why', () => {
    const { fake, controller, output } = setup({ mcp: false });
    assert.deepEqual([...fake.tools.keys()], [TOOL_NAME]);
    assert.ok(!controller.agentTools.hasMcpApi);
    assert.ok(output().some((l) => l.includes('no MCP server definition API (1.101 or newer has it)')), output().join('\n'));
    controller.dispose();
  });

  test('a change of workspace folders, or of server settings: VS Code is told and gets the new definition', async () => {
    const { fake, controller, provider, definitions } = setup();
    await controller.start();
    await definitions();
    let fired = 0;
    provider()!.onDidChangeMcpServerDefinitions!(() => (fired += 1));
    fake.changeFolders(['/w/app']);
    await until(() => fired === 1, 'onDidChangeMcpServerDefinitions after a folder was removed');
    assert.deepEqual((await definitions())[0]?.args, ['mcp', '--root', '/w/app']);
    fake.changeSettings({ redactSecrets: false });
    await until(() => fired === 2, 'onDidChangeMcpServerDefinitions after a server setting changed');
    assert.equal((await definitions())[0]?.env.READMANY_REDACT_SECRETS, 'false');
    fake.changeSettings({ statusRefreshSeconds: 5 });
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(fired, 2, 'a setting the server does not get changes nothing');
    controller.dispose();
  });

  test('no readmany found: no server definition, and a warning', async () => {
    const { controller, definitions, output } = setup({}, false);
    await controller.start();
    assert.deepEqual(await definitions(), []);
    assert.ok(output().some((l) => l.includes('[warning] MCP server: readmany was not found')), output().join('\n'));
    controller.dispose();
  });
});
