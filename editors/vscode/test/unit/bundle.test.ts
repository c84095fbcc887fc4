/** dist/extension.js (built by `npm test` as `npm run package` builds it) is self-contained:
 * the .vsix ships without node_modules (`vsce package --no-dependencies`). */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { builtinModules } from 'node:module';
import * as path from 'node:path';
import { test } from 'node:test';
import { packageRoot } from '../helpers';

test('the bundle requires only node built-ins and vscode, and exports activate/deactivate', () => {
  const file = path.join(packageRoot(), 'dist', 'extension.js');
  assert.ok(fs.existsSync(file), 'dist/extension.js is built (node scripts/build.mjs --production)');
  const code = fs.readFileSync(file, 'utf8');
  const required = new Set([...code.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1] as string));
  const allowed = new Set([...builtinModules, 'vscode']);
  assert.deepEqual([...required].filter((r) => !allowed.has(r.replace(/^node:/, ''))), []);
  assert.ok(required.has('vscode'));
  assert.match(code, /activate:\(\)=>|activate: \(\) =>/);
  assert.match(code, /deactivate:\(\)=>|deactivate: \(\) =>/);
  const notices = fs.readFileSync(path.join(packageRoot(), 'dist', 'THIRD_PARTY_NOTICES.txt'), 'utf8');
  assert.match(notices, /^vscode-languageclient \d+\.\d+\.\d+ \(MIT\)$/m);
});
