/** package.json is half of the extension: its contributions must match the code. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { MCP_PROVIDER_ID, TOOL_CONTEXT_KEY } from '../../src/agentTools';
import { READ_MANY_PARAM_FIELDS } from '../../src/protocol';
import { DEFAULTS, FORMATS, readSettings, SECTION } from '../../src/settings';
import { TOOL_NAME } from '../../src/tool';
import { packageRoot, readManifest, type Json } from '../helpers';

const manifest = readManifest();
const tool = manifest.contributes.languageModelTools[0];
const schema = tool.inputSchema;

describe('languageModelTools contribution', () => {
  test('one tool, named as the code registers it, referenceable in chat', () => {
    assert.equal(manifest.contributes.languageModelTools.length, 1);
    assert.equal(tool.name, TOOL_NAME);
    assert.equal(tool.toolReferenceName, 'readMany');
    assert.equal(tool.canBeReferencedInPrompt, true);
    for (const key of ['displayName', 'userDescription', 'modelDescription', 'icon']) assert.ok(tool[key], key);
  });

  test('the input schema is ReadManyParams: every field of PROTOCOL §3, nothing else', () => {
    assert.equal(schema.type, 'object');
    assert.equal(schema.additionalProperties, false);
    assert.deepEqual(Object.keys(schema.properties), [...READ_MANY_PARAM_FIELDS]);
    assert.equal(schema.required, undefined, 'no field is required on its own');
    for (const [name, prop] of Object.entries<Json>(schema.properties)) {
      // generated from the wire Structs: a description where the name does not say it all
      if ('description' in prop) assert.ok(typeof prop.description === 'string' && prop.description.length > 8, `${name} has a description`);
    }
    for (const name of ['paths', 'files', 'maxTotalTokens', 'cursor', 'root']) assert.ok(schema.properties[name].description, name);
  });

  test('field types, enums and defaults are the protocol’s', () => {
    const p = schema.properties;
    const fileSpec = p.files.items;
    assert.deepEqual(Object.keys(fileSpec.properties), ['path', 'offset', 'limit', 'column', 'cells', 'symbol', 'enclosing']);
    assert.deepEqual(fileSpec.required, ['path']);
    assert.equal(fileSpec.properties.offset.type, 'integer');
    assert.equal(fileSpec.properties.symbol.type, 'string');
    assert.equal(fileSpec.properties.enclosing.type, 'integer');
    assert.equal(fileSpec.properties.column.type, 'integer');
    assert.deepEqual(p.paths.items, { type: 'string' }, 'a {path, offset} entry is what files is for');
    assert.deepEqual(Object.keys(p.fileFilteringOptions.properties), ['respectGitIgnore', 'respectIgnoreFiles']);
    assert.deepEqual(p.changes.properties, { base: { type: 'string' } }, 'changes: {base}, none meaning HEAD');
    const expected: Record<string, unknown> = {
      recursive: true,
      useDefaultExcludes: true,
      perFileMaxLines: 200,
      perFileMaxChars: 20000,
      maxTotalFiles: 20,
      maxTotalChars: 50000, // the tool's budget (readmany.toolMaxTotalChars), not the protocol's
      maxTotalTokens: 20000, // readmany.toolMaxTotalTokens
      packing: 'outlines', // the tools' own default (PROTOCOL §4 "Outlines")
      format: 'separator',
      sync: 'auto',
    };
    for (const name of ['preferFullRead', 'stopOnError', 'lineNumbers', 'absolutePaths']) assert.equal(p[name].type, 'boolean', name);
    for (const [name, value] of Object.entries(expected)) assert.equal(p[name].default, value, name);
    assert.deepEqual(p.format.enum, FORMATS);
    assert.deepEqual(p.packing.enum, ['auto', 'request-order', 'smallest-first', 'outlines']);
    assert.deepEqual(p.sync.enum, ['auto', 'stat', 'none']);
    for (const name of ['perFileMaxLines', 'perFileMaxChars', 'maxTotalFiles', 'maxTotalChars', 'perFileMaxTokens']) {
      assert.equal(p[name].type, 'integer', name);
    }
    assert.equal(p.maxTotalTokens.minimum, 1000);
    assert.equal(p.maxTotalTokens.default, DEFAULTS.tool.maxTotalTokens);
    assert.equal(p.maxTotalChars.default, DEFAULTS.tool.maxTotalChars);
  });

  test('the model description says when to use it and how budgets, offsets and cursors continue', () => {
    const d: string = tool.modelDescription;
    for (const needle of ['instead of reading files one at a time', 'glob', 'maxTotalFiles', 'maxTotalChars', 'perFileMaxLines', 'offset', 'cursor', 'next page', 'files: [{"path": "big.py", "offset": 201}]']) {
      assert.ok(d.includes(needle), `modelDescription mentions ${needle}`);
    }
  });
});

describe('settings contribution', () => {
  const props: Record<string, Json> = manifest.contributes.configuration.properties;

  test('every contributed setting is read by readSettings, and nothing else is', () => {
    const asked: string[] = [];
    readSettings({ get: (key) => (asked.push(`${SECTION}.${key}`), undefined) });
    const contributed = Object.keys(props).filter((k) => k !== 'readmany.trace.server');
    assert.deepEqual(asked.sort(), contributed.sort());
  });

  test('contributed defaults are the code’s defaults', () => {
    const values: Record<string, unknown> = {};
    for (const [key, prop] of Object.entries(props)) values[key.slice(SECTION.length + 1)] = prop.default;
    const fromManifest = readSettings({ get: <T>(key: string) => values[key] as T });
    assert.deepEqual(fromManifest, DEFAULTS);
    assert.deepEqual(props['readmany.read.format']?.enum, FORMATS);
  });

  test('readmany.redactSecrets is a boolean setting, on by default', () => {
    const prop = props['readmany.redactSecrets'];
    assert.equal(prop?.type, 'boolean');
    assert.equal(prop?.default, true);
  });

  test('launch settings are restricted in untrusted workspaces', () => {
    assert.deepEqual(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations, ['readmany.path', 'readmany.interpreter']);
  });
});

describe('the MCP server contribution', () => {
  test('one provider, under the id the code registers', () => {
    assert.deepEqual(manifest.contributes.mcpServerDefinitionProviders, [{ id: MCP_PROVIDER_ID, label: 'Read Many Files' }]);
  });

  test('the tool is listed only while the extension says so (the MCP server may stand in for it)', () => {
    assert.equal(tool.when, TOOL_CONTEXT_KEY);
  });

  test('a workspace extension: in a remote window it, and the servers it registers, run beside the files', () => {
    assert.deepEqual(manifest.extensionKind, ['workspace']);
  });
});

describe('commands, menus, packaging', () => {
  test('commands have titles in the "Read Many Files" category; the Explorer menu has the two read commands', () => {
    const commands: Json[] = manifest.contributes.commands;
    for (const c of commands) assert.equal(c.category, 'Read Many Files', c.command);
    const byId = Object.fromEntries(commands.map((c) => [c.command, c.title]));
    assert.equal(byId['readmany.copyToClipboard'], 'Copy to Clipboard');
    assert.equal(byId['readmany.openInEditor'], 'Open in Editor');
    assert.equal(byId['readmany.restartServer'], 'Restart Server');
    assert.deepEqual(
      manifest.contributes.menus['explorer/context'].map((m: Json) => m.command),
      ['readmany.copyToClipboard', 'readmany.openInEditor'],
    );
  });

  test('engines.vscode matches the @types/vscode it is built against; versions are pinned', () => {
    const types: string = manifest.devDependencies['@types/vscode'];
    assert.equal(manifest.engines.vscode, `^${types}`);
    assert.ok(Number(types.split('.')[1]) >= 101, 'lm.registerMcpServerDefinitionProvider needs VS Code 1.101');
    for (const [name, version] of Object.entries<string>({ ...manifest.dependencies, ...manifest.devDependencies })) {
      assert.match(version, /^\d+\.\d+\.\d+$/, `${name} is pinned`);
    }
    const lock = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package-lock.json'), 'utf8'));
    assert.equal(lock.packages[''].devDependencies['@types/vscode'], types);
  });

  test('the .vsix holds the bundle, not the sources; vsce needs no prompt', () => {
    assert.equal(manifest.main, './dist/extension.js');
    assert.ok(manifest.repository?.url, 'a repository field');
    assert.ok(manifest.publisher);
    assert.ok(fs.existsSync(path.join(packageRoot(), 'LICENSE')));
    assert.match(manifest.scripts.package, /vsce package --no-dependencies/);
    assert.match(manifest.scripts['vscode:prepublish'], /build\.mjs --production/);
    const ignore = fs.readFileSync(path.join(packageRoot(), '.vscodeignore'), 'utf8');
    assert.match(ignore, /^\*\*$/m);
    assert.match(ignore, /^!dist\/extension\.js$/m);
  });

  test('the README documents every setting and command', () => {
    const readme = fs.readFileSync(path.join(packageRoot(), 'README.md'), 'utf8');
    for (const key of Object.keys(manifest.contributes.configuration.properties)) assert.ok(readme.includes(`\`${key}\``), key);
    for (const c of manifest.contributes.commands) assert.ok(readme.includes(c.title), c.title);
    assert.ok(readme.includes(TOOL_NAME));
  });
});
