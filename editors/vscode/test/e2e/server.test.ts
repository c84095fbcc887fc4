/**
 * End-to-end: the REAL readmany server (`readmany serve --stdio`, and `readmany lsp` with
 * the shared daemon), spoken to through vscode-jsonrpc, with the extension's own glue
 * (settings → initializationOptions, tool input → ReadManyParams, result → tool parts,
 * the controller with a fake `vscode`).
 *
 * The server is found with the extension's discovery (nodeHost): the interpreter
 * READMANY_PYTHON (else $VIRTUAL_ENV/bin/python, else /work/venv/bin/python, this
 * project's development venv) with `-m readmany_daemon`, then `readmany` on PATH.
 * None: the tests skip, or fail when CI is set.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, test } from 'node:test';
import type * as vscode from 'vscode';
import { ReadManyController } from '../../src/controller';
import { findServer, type ServerCommand } from '../../src/discovery';
import { nodeHost } from '../../src/nodeHost';
import { METHODS, type ReadManyParams, type ReadManyResult, type StatusResult } from '../../src/protocol';
import { DEFAULTS, toInitializationOptions, type Settings } from '../../src/settings';
import { describeStatus } from '../../src/statusBar';
import { describeError, toReadManyParams, toToolResultParts, TOOL_NAME } from '../../src/tool';
import { asVscode, createFakeVscode, LanguageModelDataPart, LanguageModelTextPart, LanguageModelToolResult, Uri } from '../fake/vscode';
import { readManifest, until, type Json } from '../helpers';
import { JsonRpcClient } from './jsonrpcClient';

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
const BIG = Array.from({ length: 300 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

function interpreterCandidates(): string[] {
  const venv = process.env.VIRTUAL_ENV;
  return [process.env.READMANY_PYTHON, venv && path.join(venv, 'bin', 'python')].filter(
    (p): p is string => typeof p === 'string' && p !== '' && fs.existsSync(p),
  );
}

const quiet = { info: () => {}, warn: () => {}, error: () => {} };

/** The server as the extension would find it, with `shared` chosen. */
async function discover(shared: boolean): Promise<ServerCommand | undefined> {
  const interpreter = interpreterCandidates().slice(0, 1);
  return findServer({ ...DEFAULTS, shared, interpreter }, nodeHost(undefined), quiet);
}

let server: ServerCommand | undefined;
let skipReason: string | undefined;

before(async () => {
  server = await discover(false);
  if (!server) {
    const message =
      'no readmany server to test against: set READMANY_PYTHON to a Python with readmany-daemon installed ' +
      '(pip install -e ../..), or put `readmany` on PATH';
    if (process.env.CI) throw new Error(message);
    skipReason = message;
  }
});

interface Workspace {
  dir: string;
  env: NodeJS.ProcessEnv;
  gitignoreApplies: boolean;
}

const tmpRoots: string[] = [];
after(() => {
  for (const dir of tmpRoots) fs.rmSync(dir, { recursive: true, force: true });
});

/** A temporary workspace with a few files, and an environment of its own (HOME, XDG_*). */
function workspace(): Workspace {
  const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'readmany-vscode-')));
  tmpRoots.push(base);
  const dir = path.join(base, 'ws');
  const files: Record<string, string | Buffer> = {
    'a.txt': 'alpha\n',
    'src/b.ts': 'export const b = 1;\n',
    'src/c.ts': 'export const c = 2;\n',
    'docs/guide.md': '# Guide\n',
    'big.txt': BIG,
    'img.png': PNG,
    '.gitignore': 'ignored.log\n',
    'ignored.log': 'should not be listed\n',
    'node_modules/dep/index.js': 'module.exports = 1;\n',
  };
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), content);
  }
  const home = path.join(base, 'home');
  fs.mkdirSync(path.join(home, 'run'), { recursive: true, mode: 0o700 });
  fs.chmodSync(path.join(home, 'run'), 0o700);
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('READMANY_')) env[k] = v;
  Object.assign(env, {
    HOME: home,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_STATE_HOME: path.join(home, '.state'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    XDG_RUNTIME_DIR: path.join(home, 'run'),
    READMANY_NO_DAEMON: '1',
    READMANY_IDLE_TIMEOUT_SECONDS: '120',
    GIT_CONFIG_NOSYSTEM: '1',
  });
  let gitignoreApplies = true;
  try {
    execFileSync('git', ['init', '-q'], { cwd: dir, env, stdio: 'ignore' });
  } catch {
    gitignoreApplies = false; // no git here: .gitignore outside a repository is not applied
  }
  return { dir, env, gitignoreApplies };
}

function client(ws: Workspace, command: ServerCommand, settings: Settings = DEFAULTS): JsonRpcClient {
  return new JsonRpcClient(command.command, command.args, {
    env: ws.env,
    cwd: ws.dir,
    folders: [ws.dir],
    initializationOptions: () => toInitializationOptions(settings),
  });
}

/** Run `body` with a started client; always stop (or kill) it. */
async function withServer(ws: Workspace, settings: Settings, body: (c: JsonRpcClient) => Promise<void>, command = server): Promise<JsonRpcClient> {
  assert.ok(command);
  const c = client(ws, command, settings);
  try {
    await c.start();
    await body(c);
    await c.stop();
    assert.equal(await c.exited, 0, `exit code after shutdown/exit; stderr:\n${c.stderr}`);
  } finally {
    c.kill();
  }
  return c;
}

const read = (c: JsonRpcClient, input: unknown) => c.sendRequest<ReadManyResult>(METHODS.read, toReadManyParams(input));

describe('the real server over vscode-jsonrpc', { timeout: 60000 }, () => {
  test('initialize, readMany/read, readMany/status, shutdown/exit', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const ws = workspace();
    const c = await withServer(ws, DEFAULTS, async (c) => {
      assert.equal(c.initializeResult?.serverInfo?.name, 'readmany');

      const result = await read(c, { paths: ['a.txt', 'src/', 'big.txt', 'img.png', '**/*.log', 'nope.txt'] });
      assert.ok(result.llmContent.includes('--- a.txt ---\nalpha\n'), result.llmContent);
      assert.ok(result.llmContent.includes('--- src/b.ts ---\nexport const b = 1;\n'));
      assert.ok(result.llmContent.includes('[Showing lines 1-200 of 300. Continue with offset=201.]'));
      assert.ok(result.llmContent.endsWith('--- End of content ---'));
      const byPath = Object.fromEntries(result.files.map((f) => [f.path, f]));
      assert.equal(byPath['big.txt']?.status, 'partial');
      assert.equal(byPath['big.txt']?.nextOffset, 201);
      assert.equal(byPath['nope.txt']?.status, 'error');
      assert.equal(byPath['nope.txt']?.code, 'not-found');
      if (ws.gitignoreApplies) assert.equal(byPath['**/*.log']?.code, 'no-match');
      assert.deepEqual(result.attachments?.map((a) => [a.path, a.mimeType]), [['img.png', 'image/png']]);

      // The tool's parts: llmContent, then the image (label + data part) on a host that has them.
      const parts = toToolResultParts(result, { LanguageModelTextPart, LanguageModelDataPart });
      assert.equal((parts[0] as LanguageModelTextPart).value, result.llmContent);
      assert.deepEqual(Buffer.from((parts[2] as LanguageModelDataPart).data), PNG);

      const status = await c.sendRequest<StatusResult>(METHODS.status, {});
      assert.equal(status.roots[0]?.root, ws.dir);
      assert.equal(status.roots[0]?.indexed, true);
      assert.ok(status.fileCount >= 6, `fileCount ${status.fileCount}`);
      assert.ok(!JSON.stringify(status).includes('node_modules/dep'), 'default excludes');
      assert.match(describeStatus({ state: 'running', server, status }).text, /^\$\(zap\) readmany \d+$/);
    });
    assert.deepEqual(c.logMessages.filter((m) => m.type <= 2), [], 'no warnings about our initializationOptions');
  });

  test('every field of the tool input schema is accepted, and a bad one is named', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const ws = workspace();
    const schema: Json = readManifest().contributes.languageModelTools[0].inputSchema;
    const input: Record<string, unknown> = {};
    for (const [name, prop] of Object.entries<Json>(schema.properties)) if ('default' in prop) input[name] = prop.default;
    Object.assign(input, {
      paths: ['a.txt', { path: 'big.txt', offset: 250 }],
      files: [{ path: 'big.txt', offset: 10, limit: 5 }],
      include: ['docs/*.md'],
      exclude: ['**/*.log'],
      fileFilteringOptions: { respectGitIgnore: true, respectIgnoreFiles: true },
      root: path.basename(ws.dir),
      perFileMaxTokens: 5000,
      preferFullRead: false,
      stopOnError: false,
      lineNumbers: false,
      absolutePaths: false,
      known: [{ path: 'a.txt', sha256: '0'.repeat(64) }], // a receipt that does not hold: content is sent
      redactSecrets: true,
      order: 'request-order',
      focus: 'line 250 of big.txt', // ranked: every entry gets its rank, the summary its ranking
    });
    // cursor continues a request; changes needs a commit to diff against (none here: below).
    for (const name of Object.keys(schema.properties)) if (name !== 'cursor' && name !== 'changes') assert.ok(name in input, name);
    await withServer(ws, DEFAULTS, async (c) => {
      const result = await read(c, input);
      assert.equal(result.summary.read, 4, result.llmContent);
      assert.ok(result.summary.ranking && result.files.every((f) => typeof f.rank === 'number'), JSON.stringify(result.files));
      assert.ok(result.llmContent.includes('--- big.txt ---\nline 10\n'), result.llmContent);
      assert.ok(result.llmContent.includes('line 250\n'));

      const error = await read(c, { paths: ['a.txt'], maxTotalFiles: 0 }).then(
        () => assert.fail('maxTotalFiles 0 must be refused'),
        (e: unknown) => e,
      );
      assert.equal((error as { code: number }).code, -32602);
      assert.match(describeError(error), /^readmany refused the input \(.*\$\.maxTotalFiles.*\); fix that field and call again$/);

      // The workspace is a repository without a commit (or no repository without git).
      const noBase = await read(c, { changes: { base: null } }).then(
        () => assert.fail('changes without a commit to diff against must be refused'),
        (e: unknown) => e,
      );
      assert.equal((noBase as { code: number }).code, -32602);
      const named = ws.gitignoreApplies
        ? /\$\.changes: the repository has no commit yet/
        : /\$\.changes: the root is not in a git work tree/;
      assert.match(describeError(noBase), named);
    });
  });

  test('budgets continue: offset for a cut file, cursor for omitted files', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const ws = workspace();
    await withServer(ws, DEFAULTS, async (c) => {
      const rest = await read(c, { files: [{ path: 'big.txt', offset: 201 }] });
      assert.equal(rest.files[0]?.lineStart, 201);
      assert.equal(rest.files[0]?.lineEnd, 300);

      const seen: string[] = [];
      let page = await read(c, { paths: ['a.txt', 'src/', 'docs/'], maxTotalFiles: 1 });
      for (let i = 0; i < 10; i += 1) {
        seen.push(...page.files.filter((f) => f.status === 'ok').map((f) => f.path));
        if (!page.nextCursor) break;
        assert.ok(page.llmContent.includes(page.nextCursor), 'the answer tells the model its cursor');
        page = await read(c, { cursor: page.nextCursor });
      }
      assert.deepEqual(seen, ['a.txt', 'src/b.ts', 'src/c.ts', 'docs/guide.md']);
    });
  });

  test('initializationOptions set the read defaults; didChangeConfiguration changes them', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const ws = workspace();
    const settings: Settings = { ...DEFAULTS, read: { ...DEFAULTS.read, maxTotalFiles: 1, format: 'xml' } };
    const c = await withServer(ws, settings, async (c) => {
      const first = await read(c, { paths: ['src/'] });
      assert.equal(first.summary.read, 1);
      assert.ok(first.llmContent.startsWith('<documents>'), first.llmContent);
      const more: Settings = { ...settings, read: { ...settings.read, maxTotalFiles: 50 } };
      await c.sendNotification('workspace/didChangeConfiguration', { settings: { readmany: toInitializationOptions(more) } });
      const second = await read(c, { paths: ['src/'] });
      assert.equal(second.summary.read, 2);
    });
    assert.deepEqual(c.logMessages.filter((m) => m.type <= 2), []);
  });

  test('the shared daemon through `readmany lsp`', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const lsp = await discover(true);
    assert.equal(lsp?.mode, 'lsp');
    assert.ok(lsp);
    const ws = workspace();
    delete ws.env.READMANY_NO_DAEMON;
    let daemonPid: number | undefined;
    try {
      await withServer(
        ws,
        DEFAULTS,
        async (c) => {
          const result = await read(c, { paths: ['a.txt'] });
          assert.ok(result.llmContent.includes('alpha'));
          const status = await c.sendRequest<StatusResult>(METHODS.status, {});
          daemonPid = status.pid;
          assert.notEqual(status.pid, c.process?.pid, 'the daemon, not the bridge, answers');
          assert.match(describeStatus({ state: 'running', server: lsp, status, connectedSeconds: 0 }).tooltip, /shared daemon \(`readmany lsp`\)/);
        },
        lsp,
      );
    } finally {
      // The daemon outlives the bridge (that is its point): stop the one this test started.
      const stop = spawnSync(lsp.command, [...lsp.args.slice(0, -1), 'stop'], { env: ws.env, encoding: 'utf8', timeout: 30000 });
      if (stop.status !== 0 && daemonPid !== undefined) {
        t.diagnostic(`readmany stop exited ${stop.status}: ${stop.stderr.trim()}; killing pid ${daemonPid}`);
        try {
          process.kill(daemonPid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    }
  });
});

describe('the extension (fake vscode) over the real server', { timeout: 60000 }, () => {
  test('discovery, status bar, tool, commands, restart', async (t) => {
    if (skipReason) return t.skip(skipReason);
    const ws = workspace();
    const interpreter = interpreterCandidates().slice(0, 1);
    const fake = createFakeVscode({ folders: [ws.dir], settings: { shared: false, interpreter }, inputs: ['docs/*.md'] });
    const started: JsonRpcClient[] = [];
    const controller = new ReadManyController(asVscode(fake), {
      createClient: (command, options) => {
        const c = new JsonRpcClient(command.command, command.args, { env: ws.env, cwd: options.cwd, folders: [ws.dir], initializationOptions: options.initializationOptions });
        started.push(c);
        return c;
      },
      host: nodeHost,
    });
    try {
      await controller.start();
      const output = fake.recorded.outputs[0]?.lines.join('\n') ?? '';
      assert.match(output, /\[info\] Looking for the readmany server/);
      assert.match(output, /starting .* (serve --stdio)/);
      assert.equal(controller.server.state, 'running', output);
      // Indexing runs after `initialized`; the item polls every second until it is warm.
      await until(() => /^\$\(zap\) readmany \d+$/.test(fake.recorded.statusItems[0]?.text ?? ''), 'a warm status bar', 20000);

      const tool = fake.tools.get(TOOL_NAME) as vscode.LanguageModelTool<ReadManyParams>;
      const token = new fake.vscode.CancellationTokenSource().token as unknown as vscode.CancellationToken;
      const out = (await tool.invoke({ input: { paths: ['a.txt', 'img.png'] } } as vscode.LanguageModelToolInvocationOptions<ReadManyParams>, token)) as unknown as LanguageModelToolResult;
      assert.ok((out.content[0] as LanguageModelTextPart).value.includes('--- a.txt ---\nalpha\n'));
      assert.ok(out.content[2] instanceof LanguageModelDataPart);

      await fake.vscode.commands.executeCommand('readmany.copyToClipboard', Uri.file(path.join(ws.dir, 'src')), [Uri.file(path.join(ws.dir, 'src')), Uri.file(path.join(ws.dir, 'a.txt'))]);
      assert.ok(fake.recorded.clipboard[0]?.includes('--- src/b.ts ---'));
      assert.ok(fake.recorded.clipboard[0]?.includes('--- a.txt ---'));
      await fake.vscode.commands.executeCommand('readmany.openInEditor');
      assert.ok(fake.recorded.documents[0]?.content.includes('# Guide'));

      await fake.vscode.commands.executeCommand('readmany.restartServer');
      assert.equal(started.length, 2);
      assert.equal(await started[0]?.exited, 0);
      assert.equal(controller.server.state, 'running');
      assert.deepEqual((await controller.publicApi.status()).roots.map((r) => r.root), [ws.dir]);
      await controller.stop();
      assert.equal(await started[1]?.exited, 0);
    } finally {
      controller.dispose();
      for (const c of started) c.kill();
    }
  });
});
