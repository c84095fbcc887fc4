// Build with esbuild.
//   node scripts/build.mjs               dist/extension.js (bundled, with a source map)
//   node scripts/build.mjs --production  dist/extension.js (bundled, minified): what the .vsix holds
//   node scripts/build.mjs --tests       out/ (src and test transpiled file by file, for node --test)
// Type-checking is tsc's job (npm run typecheck): esbuild only strips types.
import * as esbuild from 'esbuild';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = new Set(process.argv.slice(2));

function tsFiles(dir) {
  return readdirSync(join(root, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath ?? e.path, e.name));
}

if (args.has('--tests')) {
  rmSync(join(root, 'out'), { recursive: true, force: true });
  await esbuild.build({
    absWorkingDir: root,
    entryPoints: [...tsFiles('src'), ...tsFiles('test')],
    outbase: root,
    outdir: join(root, 'out'),
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    sourcemap: 'inline',
    logLevel: 'warning',
  });
} else {
  const production = args.has('--production');
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: [join(root, 'src', 'extension.ts')],
    bundle: true,
    outfile: join(root, 'dist', 'extension.js'),
    external: ['vscode'],
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    minify: production,
    sourcemap: !production,
    metafile: true,
    logLevel: 'warning',
  });
  writeNotices(result.metafile);
}

// dist/THIRD_PARTY_NOTICES.txt: the license of every npm package bundled into the extension.
function writeNotices(metafile) {
  const packages = new Map();
  for (const input of Object.keys(metafile.inputs)) {
    const m = /^(.*node_modules\/((?:@[^/]+\/)?[^/]+))\//.exec(input.split('\\').join('/'));
    if (m) packages.set(m[2], join(root, m[1]));
  }
  const sections = [...packages.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([name, dir]) => {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const licenseFile = readdirSync(dir).find((f) => /^licen[cs]e(\.|$)/i.test(f));
    const text = licenseFile ? readFileSync(join(dir, licenseFile), 'utf8').trim() : `License: ${pkg.license}`;
    return `${name} ${pkg.version} (${pkg.license})\n${'-'.repeat(60)}\n${text}\n`;
  });
  writeFileSync(
    join(root, 'dist', 'THIRD_PARTY_NOTICES.txt'),
    `This extension bundles the following npm packages.\n\n${sections.join('\n\n')}`,
  );
}
