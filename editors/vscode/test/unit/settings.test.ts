import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULTS, launchKey, readSettings, serverKey, toInitializationOptions, type ConfigurationLike } from '../../src/settings';

function config(values: Record<string, unknown>): ConfigurationLike {
  return { get: <T>(key: string) => values[key] as T | undefined };
}

describe('readSettings', () => {
  test('every setting has its default when nothing is set', () => {
    const warnings: string[] = [];
    assert.deepEqual(readSettings(config({}), (w) => warnings.push(w)), DEFAULTS);
    assert.deepEqual(warnings, []);
  });

  test('values of the right type are taken', () => {
    const s = readSettings(
      config({
        path: ['/opt/readmany'],
        interpreter: ['py', '-3'],
        shared: false,
        statusRefreshSeconds: 0,
        ignoreFileNames: ['.aiignore'],
        denyPatterns: ['*.secret'],
        defaultExcludes: [],
        maxFileBytes: 1000,
        shareOverlays: false,
        redactSecrets: false,
        rankingIndex: 'always',
        'read.perFileMaxLines': 50,
        'read.perFileMaxChars': 5000,
        'read.maxTotalFiles': 100,
        'read.maxTotalChars': 9999,
        'read.format': 'xml',
        'read.lineNumbers': true,
        toolMaxTotalTokens: 8000,
        toolMaxTotalChars: 30000,
        'mcpServer.enabled': false,
        'mcpServer.alsoLanguageModelTool': true,
      }),
    );
    assert.deepEqual(s, {
      path: ['/opt/readmany'],
      interpreter: ['py', '-3'],
      shared: false,
      statusRefreshSeconds: 0,
      server: { ignoreFileNames: ['.aiignore'], denyPatterns: ['*.secret'], defaultExcludes: [], maxFileBytes: 1000, shareOverlays: false, redactSecrets: false, rankingIndex: 'always' },
      read: { perFileMaxLines: 50, perFileMaxChars: 5000, maxTotalFiles: 100, maxTotalChars: 9999, format: 'xml', lineNumbers: true },
      tool: { maxTotalTokens: 8000, maxTotalChars: 30000 },
      mcpServer: { enabled: false, alsoLanguageModelTool: true },
    });
  });

  test("the tool budgets: toolMaxTotalTokens below the server's 1000 is refused with a warning", () => {
    const warnings: string[] = [];
    const s = readSettings(config({ toolMaxTotalTokens: 999, toolMaxTotalChars: 0 }), (w) => warnings.push(w));
    assert.deepEqual(s.tool, { maxTotalTokens: 20000, maxTotalChars: 50000 });
    assert.equal(warnings.length, 2);
    assert.ok(warnings[0]?.includes('readmany.toolMaxTotalTokens') && warnings[0].includes('>= 1000'), warnings[0]);
  });

  test('a bad value is a warning naming the setting, and the default stays', () => {
    const warnings: string[] = [];
    const s = readSettings(
      config({ shared: 'yes', 'read.maxTotalFiles': 0, 'read.format': 'yaml', maxFileBytes: 1.5, path: [1, 2], statusRefreshSeconds: -1 }),
      (w) => warnings.push(w),
    );
    assert.equal(s.shared, true);
    assert.equal(s.read.maxTotalFiles, 20);
    assert.equal(s.read.format, 'separator');
    assert.equal(s.server.maxFileBytes, DEFAULTS.server.maxFileBytes);
    assert.deepEqual(s.path, []);
    assert.equal(s.statusRefreshSeconds, 30);
    assert.equal(warnings.length, 6);
    for (const name of ['readmany.shared', 'readmany.read.maxTotalFiles', 'readmany.read.format', 'readmany.maxFileBytes', 'readmany.path', 'readmany.statusRefreshSeconds']) {
      assert.ok(warnings.some((w) => w.includes(name)), `a warning names ${name}: ${warnings.join(' | ')}`);
    }
  });

  test('a single string where a list goes is a list of one', () => {
    const s = readSettings(config({ path: '/usr/bin/readmany', interpreter: 'python3', ignoreFileNames: '' }));
    assert.deepEqual(s.path, ['/usr/bin/readmany']);
    assert.deepEqual(s.interpreter, ['python3']);
    assert.deepEqual(s.server.ignoreFileNames, []);
  });
});

describe('toInitializationOptions', () => {
  test('defaults: PROTOCOL §7 settings and the read defaults, server lists left to the server', () => {
    assert.deepEqual(toInitializationOptions(DEFAULTS), {
      ignoreFileNames: ['.readmanyignore'],
      maxFileBytes: 20971520,
      shareOverlays: true,
      redactSecrets: true,
      rankingIndex: 'on-demand',
      perFileMaxLines: 200,
      perFileMaxChars: 20000,
      maxTotalFiles: 20,
      maxTotalChars: 200000,
      format: 'separator',
      lineNumbers: false,
    });
  });

  test('set lists are sent (copies), launch settings never are', () => {
    const settings = {
      ...DEFAULTS,
      path: ['/x'],
      server: { ...DEFAULTS.server, denyPatterns: ['*.secret'], defaultExcludes: ['vendor/'] },
    };
    const options = toInitializationOptions(settings);
    assert.deepEqual(options.denyPatterns, ['*.secret']);
    assert.deepEqual(options.defaultExcludes, ['vendor/']);
    assert.notEqual(options.denyPatterns, settings.server.denyPatterns);
    for (const key of ['path', 'interpreter', 'shared', 'statusRefreshSeconds', 'server', 'read']) assert.ok(!(key in options), key);
  });

  test('redactSecrets false goes to the server, which then shows secrets as they are', () => {
    const settings = readSettings(config({ redactSecrets: false }));
    assert.equal(toInitializationOptions(settings).redactSecrets, false);
    assert.notEqual(serverKey(settings), serverKey(DEFAULTS));
    const warnings: string[] = [];
    assert.equal(readSettings(config({ redactSecrets: 'no' }), (w) => warnings.push(w)).server.redactSecrets, true);
    assert.ok(warnings[0]?.includes('readmany.redactSecrets'), warnings[0]);
  });

  test('rankingIndex goes to the server; a value outside on-demand | always | off is a warning and the default stays', () => {
    const settings = readSettings(config({ rankingIndex: 'off' }));
    assert.equal(toInitializationOptions(settings).rankingIndex, 'off');
    assert.notEqual(serverKey(settings), serverKey(DEFAULTS));
    const warnings: string[] = [];
    assert.equal(readSettings(config({ rankingIndex: 'never' }), (w) => warnings.push(w)).server.rankingIndex, 'on-demand');
    assert.ok(warnings[0]?.includes('readmany.rankingIndex') && warnings[0].includes('on-demand | always | off'), warnings[0]);
  });

  test('launchKey changes only with path, interpreter, shared; serverKey only with what the server gets', () => {
    const budget = { ...DEFAULTS, read: { ...DEFAULTS.read, maxTotalFiles: 5 } };
    assert.equal(launchKey(budget), launchKey(DEFAULTS));
    assert.notEqual(serverKey(budget), serverKey(DEFAULTS));
    const shared = { ...DEFAULTS, shared: false };
    assert.notEqual(launchKey(shared), launchKey(DEFAULTS));
    assert.equal(serverKey(shared), serverKey(DEFAULTS));
    assert.equal(serverKey({ ...DEFAULTS, statusRefreshSeconds: 5 }), serverKey(DEFAULTS));
  });
});
