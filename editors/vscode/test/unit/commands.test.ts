import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { languageForFormat, ReadCommands, selectedUris, selectionToGroups, splitPatterns, summarize, type CommandApi } from '../../src/commands';
import type { ReadManyParams, ReadManyResult } from '../../src/protocol';
import { createFakeVscode, Uri } from '../fake/vscode';

function result(n: number, over: Partial<ReadManyResult> = {}): ReadManyResult {
  return {
    llmContent: `--- f${n}.txt ---\ncontent ${n}\n\n--- End of content ---`,
    attachments: [],
    returnDisplay: '',
    summary: { matched: 1, read: 1, truncated: 0, omitted: 0, skipped: 0, errors: 0, unchanged: 0, totalChars: 10, estimatedTokens: 3 },
    files: [],
    clock: '1:0',
    ...over,
  };
}

function setup(opts: Parameters<typeof createFakeVscode>[0], answers: ((p: ReadManyParams) => ReadManyResult)[] = []) {
  const fake = createFakeVscode(opts);
  const requests: ReadManyParams[] = [];
  let outputShown = 0;
  const commands = new ReadCommands(fake.vscode as unknown as CommandApi, {
    read: async (params) => {
      requests.push(params);
      const answer = answers.shift();
      if (!answer) throw Object.assign(new Error('invalid params: $.root: no workspace folder'), { code: -32602 });
      return answer(params);
    },
    format: () => 'xml',
    showOutput: () => {
      outputShown += 1;
    },
  });
  return { fake, commands, requests, outputShown: () => outputShown };
}

describe('parsing what the person gives', () => {
  test('splitPatterns: whitespace separates, quotes group, braces keep their commas', () => {
    assert.deepEqual(splitPatterns('  src/**/*.ts README.md  '), ['src/**/*.ts', 'README.md']);
    assert.deepEqual(splitPatterns('"my notes/*.md" \'a b.txt\' {a,b}/*.py'), ['my notes/*.md', 'a b.txt', '{a,b}/*.py']);
    assert.deepEqual(splitPatterns('   '), []);
  });

  test('selectedUris: the Explorer selection, else the clicked item, else nothing', () => {
    const a = Uri.file('/w/a');
    const b = Uri.file('/w/b');
    assert.deepEqual(selectedUris(a, [a, b]), [a, b]);
    assert.deepEqual(selectedUris(a, undefined), [a]);
    assert.deepEqual(selectedUris(a, { groupId: 1 }), [a]);
    assert.deepEqual(selectedUris(undefined, undefined), []);
  });

  test('selectionToGroups: one request per workspace folder, paths relative to it', () => {
    const fake = createFakeVscode({ folders: ['/w/app', '/w/lib'] });
    const folderOf = (u: { fsPath: string }) => fake.vscode.workspace.getWorkspaceFolder(u);
    const groups = selectionToGroups(
      [Uri.file('/w/app/src'), Uri.file('/w/app/README.md'), Uri.file('/w/lib/x/y.py'), Uri.file('/w/app'), Uri.file('/tmp/notes.txt'), Uri.file('/w/app/src')],
      folderOf,
    );
    assert.deepEqual(groups, [
      { root: '/w/app', paths: ['src', 'README.md', '.'] },
      { root: '/w/lib', paths: ['x/y.py'] },
      { root: '/tmp', paths: ['notes.txt'] },
    ]);
  });

  test('languageForFormat and summarize', () => {
    assert.equal(languageForFormat('xml'), 'xml');
    assert.equal(languageForFormat('json'), 'json');
    assert.equal(languageForFormat('separator'), 'plaintext');
    const s = summarize([
      result(1, { summary: { matched: 40, read: 20, truncated: 1, omitted: 18, skipped: 1, errors: 1, unchanged: 0, totalChars: 123456, estimatedTokens: 30864 }, attachments: [{ path: 'a.png', mimeType: 'image/png', data: '' }] }),
    ]);
    assert.equal(s.text, '20 files, 123,456 chars (~30,864 tokens); 18 omitted by the budget; 1 skipped; 1 error; 1 image/PDF attachment not included as text');
    assert.equal(s.omitted, 18);
  });
});

describe('Copy to Clipboard / Open in Editor', () => {
  test('from the Command Palette: asks for globs, reads them, copies llmContent', async () => {
    const { fake, commands, requests } = setup({ folders: ['/w/app'], inputs: ['src/**/*.ts "a b.md"'] }, [() => result(1)]);
    await commands.run('clipboard');
    assert.deepEqual(requests, [{ paths: ['src/**/*.ts', 'a b.md'] }]);
    assert.deepEqual(fake.recorded.clipboard, [result(1).llmContent]);
    assert.match(fake.recorded.statusMessages[0] ?? '', /^\$\(check\) readmany: copied 1 file, 10 chars/);
    assert.deepEqual(fake.recorded.messages, []);
  });

  test('the input box remembers the last entry; Escape reads nothing', async () => {
    const { fake, commands, requests } = setup({ folders: ['/w/app'], inputs: ['docs/', undefined] }, [() => result(1)]);
    await commands.run('clipboard');
    await commands.run('clipboard');
    assert.equal(requests.length, 1);
    assert.equal((fake.recorded.inputBoxes[1] as { value: string }).value, 'docs/');
  });

  test('from the Explorer: the multi-selection, one request per folder, joined', async () => {
    const { fake, commands, requests } = setup({ folders: ['/w/app', '/w/lib'] }, [() => result(1), () => result(2)]);
    const a = Uri.file('/w/app/src');
    await commands.run('editor', a, [a, Uri.file('/w/lib/util.py')]);
    assert.deepEqual(requests, [
      { paths: ['src'], root: '/w/app' },
      { paths: ['util.py'], root: '/w/lib' },
    ]);
    assert.deepEqual(fake.recorded.documents, [{ content: `${result(1).llmContent}\n${result(2).llmContent}`, language: 'xml' }]);
    assert.equal(fake.recorded.shownDocuments.length, 1);
    assert.equal(fake.recorded.inputBoxes.length, 0);
  });

  test('files left out: a message offers the next page, which sends the cursor', async () => {
    const omitted = { matched: 30, read: 20, truncated: 0, omitted: 10, skipped: 0, errors: 0, unchanged: 0, totalChars: 100, estimatedTokens: 25 };
    const { fake, commands, requests } = setup({ folders: ['/w/app'], choices: ['Next Page'] }, [
      () => result(1, { summary: omitted, nextCursor: 'CURSOR1' }),
      () => result(2),
    ]);
    await commands.run('clipboard', Uri.file('/w/app/src'));
    assert.deepEqual(requests, [{ paths: ['src'], root: '/w/app' }, { cursor: 'CURSOR1', root: '/w/app' }]);
    assert.deepEqual(fake.recorded.messages[0]?.items, ['Next Page', 'Budget Settings']);
    assert.match(fake.recorded.messages[0]?.text ?? '', /^Copied 20 files, 100 chars \(~25 tokens\); 10 omitted by the budget\. Raise readmany\.read\.maxTotalFiles/);
    assert.deepEqual(fake.recorded.clipboard, [result(1).llmContent, result(2).llmContent]);
  });

  test('"Budget Settings" opens the readmany.read settings', async () => {
    const omitted = { matched: 30, read: 20, truncated: 0, omitted: 10, skipped: 0, errors: 0, unchanged: 0, totalChars: 100, estimatedTokens: 25 };
    const { fake, commands } = setup({ folders: ['/w/app'], inputs: ['**'], choices: ['Budget Settings'] }, [() => result(1, { summary: omitted })]);
    await commands.run('clipboard');
    assert.deepEqual(fake.recorded.messages[0]?.items, ['Budget Settings']);
    assert.deepEqual(fake.recorded.executed, [['workbench.action.openSettings', 'readmany.read']]);
  });

  test('a failed read is an error message with a way to the output', async () => {
    const { fake, commands, outputShown } = setup({ inputs: ['a'], choices: ['Show Output'] });
    await commands.run('clipboard');
    assert.equal(fake.recorded.messages[0]?.kind, 'error');
    assert.match(fake.recorded.messages[0]?.text ?? '', /^readmany: readmany refused the input \(invalid params: \$\.root: no workspace folder\)/);
    assert.equal(outputShown(), 1);
    assert.deepEqual(fake.recorded.clipboard, []);
  });
});
