// Run the compiled tests (out/test/**/*.test.js) with node's built-in test runner.
//   node scripts/test.mjs          every test
//   node scripts/test.mjs unit     out/test/unit only (likewise e2e)
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const suites = process.argv.slice(2);
const dirs = (suites.length > 0 ? suites : ['unit', 'e2e']).map((s) => join(root, 'out', 'test', s));
const files = dirs
  .filter((d) => existsSync(d))
  .flatMap((d) => readdirSync(d, { recursive: true }).map((f) => join(d, String(f))))
  .filter((f) => f.endsWith('.test.js'))
  .sort();
if (files.length === 0) {
  console.error(`no compiled tests under ${dirs.join(', ')}: run node scripts/build.mjs --tests first`);
  process.exit(1);
}
const reporter = process.env.READMANY_TEST_REPORTER ?? 'spec';
const run = spawnSync(process.execPath, ['--enable-source-maps', '--test', '--test-timeout=120000', `--test-reporter=${reporter}`, ...files], {
  stdio: 'inherit',
  cwd: root,
});
process.exit(run.status ?? 1);
