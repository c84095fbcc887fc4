import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type * as vscode from 'vscode';
import type { ReadManyParams, ReadManyResult } from '../../src/protocol';
import {
  createReadManyTool,
  describeError,
  describeRequest,
  isWorkspaceRoot,
  toReadManyParams,
  withToolBudgets,
  toToolResultParts,
  ToolInputError,
  type ReadManyToolInput,
} from '../../src/tool';
import { CancellationTokenSource, LanguageModelDataPart, LanguageModelTextPart, LanguageModelToolResult, Uri } from '../fake/vscode';

const PNG = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);

function result(over: Partial<ReadManyResult> = {}): ReadManyResult {
  return {
    llmContent: '--- a.txt ---\nhello\n\n--- End of content ---',
    attachments: [],
    returnDisplay: 'Read **1** file(s)',
    summary: { matched: 1, read: 1, truncated: 0, omitted: 0, skipped: 0, errors: 0, unchanged: 0, totalChars: 6, estimatedTokens: 2 },
    files: [{ path: 'a.txt', status: 'ok', chars: 6 }],
    clock: '1:0',
    ...over,
  };
}

describe('tool input → ReadManyParams', () => {
  test('canonical input passes through unchanged', () => {
    const input: ReadManyParams = {
      paths: ['src/**/*.ts', { path: 'big.py', offset: 201 }],
      files: [{ path: 'a.py', offset: 1, limit: 10 }],
      include: ['docs/*.md'],
      exclude: ['**/*.test.ts'],
      recursive: false,
      useDefaultExcludes: false,
      fileFilteringOptions: { respectGitIgnore: false, respectIgnoreFiles: false },
      perFileMaxLines: 10,
      perFileMaxChars: 100,
      maxTotalFiles: 3,
      maxTotalChars: 1000,
      preferFullRead: true,
      packing: 'smallest-first',
      order: 'rank',
      focus: 'fixture scope: getfixturevalue',
      stopOnError: true,
      format: 'xml',
      lineNumbers: true,
      absolutePaths: true,
      root: 'ws',
      sync: 'stat',
      cursor: 'abc',
    };
    assert.deepEqual(toReadManyParams(input), input);
  });

  test('small slips are mended: nulls dropped, a string for a list, plain paths in files', () => {
    assert.deepEqual(
      toReadManyParams({ paths: 'src/', files: ['a.py', { path: 'b.py', limit: 5 }], exclude: 'dist/', root: null, cursor: undefined }),
      { paths: ['src/'], files: [{ path: 'a.py' }, { path: 'b.py', limit: 5 }], exclude: ['dist/'] },
    );
  });

  test('symbol and enclosing go through as given; null in them is for the server to read as not given', () => {
    const input = { files: [{ path: 'a.py', symbol: 'Config.load' }, { path: 'b.py', enclosing: 12, symbol: null }] };
    assert.deepEqual(toReadManyParams(input), input);
  });

  test('changes alone is something to read, and goes through as given (null: not given)', () => {
    assert.deepEqual(toReadManyParams({ changes: { base: 'origin/main' } }), { changes: { base: 'origin/main' } });
    assert.deepEqual(toReadManyParams({ changes: {}, paths: ['src/'] }), { changes: {}, paths: ['src/'] });
    assert.deepEqual(toReadManyParams({ changes: { base: null } }), { changes: { base: null } });
    assert.throws(() => toReadManyParams({ changes: null }), ToolInputError);
  });

  test('focus and order go through with a cursor; null focus is dropped (not given)', () => {
    const input = { cursor: 'abc', focus: 'parse_known_args', order: 'rank' };
    assert.deepEqual(toReadManyParams(input), input);
    assert.deepEqual(toReadManyParams({ paths: ['a'], focus: null, order: null }), { paths: ['a'] });
  });

  test('aliases and unknown fields go through for the server to fold or refuse', () => {
    assert.deepEqual(toReadManyParams({ paths: ['a'], max_total_files: 2, bogus: 1 }), { paths: ['a'], max_total_files: 2, bogus: 1 });
  });

  test('nothing to read is refused before the server is asked', () => {
    for (const input of [{}, { paths: [] }, { exclude: ['x'] }, { cursor: '' }, null, 'src/', ['a']]) {
      assert.throws(() => toReadManyParams(input), ToolInputError, JSON.stringify(input));
    }
    assert.deepEqual(toReadManyParams({ cursor: 'c' }), { cursor: 'c' });
    assert.deepEqual(toReadManyParams({ include: ['*.md'] }), { include: ['*.md'] });
  });

  test("the tool's budgets fill what the model left out; VS Code's token budget is maxTotalTokens", () => {
    const budgets = { maxTotalTokens: 20000, maxTotalChars: 50000 };
    assert.deepEqual(withToolBudgets({ paths: ['a'] }, budgets), { paths: ['a'], maxTotalTokens: 20000, maxTotalChars: 50000, maxAnswerChars: 50000, packing: 'outlines' });
    assert.equal(withToolBudgets({ paths: ['a'] }, budgets, 8000).maxAnswerChars, undefined, 'the host gave a token budget');
    assert.equal(withToolBudgets({ paths: ['a'], maxTotalChars: 90000 }, budgets).maxAnswerChars, undefined, 'asked for more');
    assert.equal(withToolBudgets({ paths: ['a'], maxTotalChars: 9000 }, budgets).maxAnswerChars, 50000, 'asked for less');
    assert.equal(withToolBudgets({ paths: ['a'] }, budgets, 8000).maxTotalTokens, 8000);
    assert.equal(withToolBudgets({ paths: ['a'] }, budgets, 10).maxTotalTokens, 1000, 'the smallest the server accepts');
    assert.equal(withToolBudgets({ paths: ['a'] }, budgets, 2500.7).maxTotalTokens, 2500);
    assert.equal(withToolBudgets({ paths: ['a'] }, budgets, 0).maxTotalTokens, 20000);
    const own = withToolBudgets({ paths: ['a'], maxTotalChars: 5, max_total_tokens: 90000 } as ReadManyParams, budgets, 8000);
    assert.equal(own.maxTotalChars, 5);
    assert.equal(own.maxTotalTokens, undefined, 'the model asked for its own, in any spelling');
    assert.equal(withToolBudgets({ paths: ['a'], packing: 'auto' }, budgets).packing, 'auto', 'the model chose');
    assert.deepEqual(withToolBudgets({ cursor: 'c' }, budgets), { cursor: 'c', maxTotalTokens: 20000, maxTotalChars: 50000, maxAnswerChars: 50000, packing: 'outlines' });
  });
});

describe('ReadManyResult → tool result parts', () => {
  const api = { LanguageModelTextPart, LanguageModelDataPart };

  test('llmContent is the first part, as text', () => {
    const parts = toToolResultParts(result(), api);
    assert.equal(parts.length, 1);
    assert.ok(parts[0] instanceof LanguageModelTextPart);
    assert.equal((parts[0] as LanguageModelTextPart).value, result().llmContent);
  });

  test('an image attachment: a label, then the decoded bytes as an image data part', () => {
    const parts = toToolResultParts(result({ attachments: [{ path: 'img.png', mimeType: 'image/png', data: PNG.toString('base64') }] }), api);
    assert.equal(parts.length, 3);
    assert.equal((parts[1] as LanguageModelTextPart).value, '[Attachment img.png (image/png, 11 bytes): the image follows.]');
    const image = parts[2] as LanguageModelDataPart;
    assert.ok(image instanceof LanguageModelDataPart);
    assert.equal(image.mimeType, 'image/png');
    assert.deepEqual(Buffer.from(image.data), PNG);
  });

  test('a PDF, or any attachment on a host without data parts, becomes a note', () => {
    const pdf = { path: 'doc.pdf', mimeType: 'application/pdf', data: Buffer.from('%PDF-1.7').toString('base64') };
    const png = { path: 'img.png', mimeType: 'image/png', data: PNG.toString('base64') };
    const withData = toToolResultParts(result({ attachments: [pdf] }), api);
    assert.match((withData[1] as LanguageModelTextPart).value, /^\[Attachment doc\.pdf \(application\/pdf, 8 bytes\) not shown: this type cannot be passed/);
    const old = toToolResultParts(result({ attachments: [png] }), { LanguageModelTextPart });
    assert.equal(old.length, 2);
    assert.match((old[1] as LanguageModelTextPart).value, /not shown: this VS Code version cannot pass images to tools \(1\.106 or newer can\)/);
  });

  test('describeError turns JSON-RPC errors into what a model can act on', () => {
    assert.equal(
      describeError({ code: -32602, message: 'invalid params: Expected `int` >= 1, got `0` - at `$.maxTotalFiles`' }),
      'readmany refused the input (invalid params: Expected `int` >= 1, got `0` - at `$.maxTotalFiles`); fix that field and call again',
    );
    assert.equal(describeError({ code: -32800, message: 'x' }), 'the read was cancelled');
    assert.equal(describeError(new Error('boom')), 'readmany could not answer: boom');
  });
});

describe('helpers', () => {
  const folders = [
    { name: 'app', uri: Uri.file('/work/app') },
    { name: 'lib', uri: Uri.file('/work/lib') },
  ];

  test('isWorkspaceRoot: names, paths, URIs, folders inside; not outside', () => {
    assert.ok(isWorkspaceRoot('app', folders, 'linux'));
    assert.ok(isWorkspaceRoot('/work/lib', folders, 'linux'));
    assert.ok(isWorkspaceRoot('/work/lib/', folders, 'linux'));
    assert.ok(isWorkspaceRoot('/work/app/src', folders, 'linux'));
    assert.ok(isWorkspaceRoot('file:///work/app', folders, 'linux'));
    assert.ok(!isWorkspaceRoot('/work', folders, 'linux'));
    assert.ok(!isWorkspaceRoot('/work/application', folders, 'linux'));
    assert.ok(!isWorkspaceRoot('/home/me/.ssh', folders, 'linux'));
    assert.ok(!isWorkspaceRoot('/work/app/../secrets', folders, 'linux'));
    assert.ok(!isWorkspaceRoot('other', folders, 'linux'));
  });

  test('describeRequest', () => {
    assert.equal(describeRequest({ paths: ['src/**/*.ts'] }), '`src/**/*.ts`');
    assert.equal(
      describeRequest({ paths: ['a', { path: 'b' }], files: [{ path: 'c', offset: 201 }], include: ['d'] }),
      '`a`, `b`, `c:201` and 1 more',
    );
    assert.equal(describeRequest({ files: [{ path: 'c', offset: 10, limit: 5 }] }), '`c:10+5`');
    assert.equal(
      describeRequest({ files: [{ path: 'a.py', symbol: 'Config.load' }, { path: 'b.md', enclosing: 12, symbol: null }] }),
      '`a.py#Config.load`, `b.md:12`',
    );
    assert.equal(describeRequest({ cursor: 'x' }), 'the next page of an earlier read');
    assert.equal(describeRequest({ changes: {} }), 'the changes since `HEAD`');
    assert.equal(describeRequest({ changes: { base: 'main' }, paths: ['src/'] }), 'the changes since `main` in `src/`');
  });
});

describe('createReadManyTool', () => {
  const folders = [{ name: 'app', uri: Uri.file('/work/app') }];
  const api = { LanguageModelTextPart, LanguageModelDataPart, LanguageModelToolResult };
  type Options = vscode.LanguageModelToolInvocationOptions<ReadManyToolInput>;
  const token = new CancellationTokenSource().token as unknown as vscode.CancellationToken;

  test('invoke sends ReadManyParams with the cancellation token and returns the parts', async () => {
    const calls: { params: ReadManyParams; token: unknown }[] = [];
    const seen: ReadManyResult[] = [];
    const tool = createReadManyTool(api, {
      read: async (params, t) => {
        calls.push({ params, token: t });
        return result();
      },
      workspaceFolders: () => folders,
      onDidRead: (r) => seen.push(r),
    });
    const out = (await tool.invoke({ input: { paths: 'a.txt' }, toolInvocationToken: undefined } as unknown as Options, token)) as unknown as LanguageModelToolResult;
    assert.deepEqual(calls, [{ params: { paths: ['a.txt'], maxTotalTokens: 20000, maxTotalChars: 50000, maxAnswerChars: 50000, packing: 'outlines' }, token }]);
    assert.ok(out instanceof LanguageModelToolResult);
    assert.equal((out.content[0] as LanguageModelTextPart).value, result().llmContent);
    assert.equal(seen.length, 1);
  });

  test("invoke passes VS Code's token budget on as maxTotalTokens, else the settings' budgets", async () => {
    let sent: ReadManyParams | undefined;
    const tool = createReadManyTool(api, { read: async (p) => ((sent = p), result()), workspaceFolders: () => folders });
    const options = { input: { paths: ['a'] }, toolInvocationToken: undefined, tokenizationOptions: { tokenBudget: 2000, countTokens: async () => 0 } };
    await tool.invoke(options as unknown as Options, token);
    assert.equal(sent?.maxTotalTokens, 2000);
    assert.equal(sent?.maxTotalChars, 50000);
    const mine = createReadManyTool(api, {
      read: async (p) => ((sent = p), result()),
      budgets: () => ({ maxTotalTokens: 3000, maxTotalChars: 7000 }),
      workspaceFolders: () => folders,
    });
    await mine.invoke({ input: { paths: ['a'] }, toolInvocationToken: undefined } as unknown as Options, token);
    assert.deepEqual([sent?.maxTotalTokens, sent?.maxTotalChars], [3000, 7000], 'the settings');
  });

  test('errors reach the model as messages it can act on', async () => {
    const tool = createReadManyTool(api, {
      read: async () => {
        throw Object.assign(new Error('invalid params: Object contains unknown field `bogus`'), { code: -32602 });
      },
      workspaceFolders: () => folders,
    });
    await assert.rejects(
      async () => tool.invoke({ input: { paths: ['a'], bogus: 1 } } as unknown as Options, token),
      /readmany refused the input \(invalid params: Object contains unknown field `bogus`\)/,
    );
    await assert.rejects(async () => tool.invoke({ input: {} } as unknown as Options, token), /invalid input for readmany_read_many_files: nothing to read/);
  });

  test('prepareInvocation: a progress line; confirmation only for a root outside the workspace', async () => {
    const tool = createReadManyTool(api, { read: async () => result(), workspaceFolders: () => folders, platform: 'linux' });
    const prepare = (input: unknown) =>
      tool.prepareInvocation?.({ input } as vscode.LanguageModelToolInvocationPrepareOptions<ReadManyToolInput>, token);
    assert.deepEqual(await prepare({ paths: ['src/**/*.ts', 'README.md'] }), { invocationMessage: 'Reading `src/**/*.ts`, `README.md`' });
    assert.deepEqual(await prepare({ paths: ['x'], root: 'app' }), { invocationMessage: 'Reading `x`' });
    const outside = (await prepare({ paths: ['credentials'], root: '/home/me/.aws' })) as vscode.PreparedToolInvocation;
    assert.equal(outside.confirmationMessages?.title, 'Read files outside the workspace?');
    assert.match(String(outside.confirmationMessages?.message), /`\/home\/me\/\.aws`, which is not a workspace folder/);
    assert.deepEqual(await prepare({}), { invocationMessage: 'Reading files' });
  });
});
