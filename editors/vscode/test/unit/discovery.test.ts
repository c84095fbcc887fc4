import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  expandVariables,
  findServer,
  NOT_FOUND_HELP,
  resolveExecutable,
  serverMode,
  which,
  type DiscoveryHost,
  type VersionProbe,
} from '../../src/discovery';
import { DEFAULTS, type Settings } from '../../src/settings';

/** A scripted machine: which files exist, what each command prints for --version. */
function machine(opts: {
  files?: string[];
  versions?: Record<string, VersionProbe>;
  platform?: string;
  env?: Record<string, string>;
  workspaceFolder?: string;
}) {
  const probes: string[] = [];
  const host: DiscoveryHost = {
    platform: opts.platform ?? 'linux',
    env: opts.env ?? { PATH: '/usr/local/bin:/usr/bin' },
    home: opts.platform === 'win32' ? 'C:\\Users\\me' : '/home/me',
    ...(opts.workspaceFolder ? { workspaceFolder: opts.workspaceFolder } : {}),
    isExecutableFile: (f) => (opts.files ?? []).includes(f),
    version: async (command, args) => {
      const key = [command, ...args].join(' ');
      probes.push(key);
      return opts.versions?.[key] ?? { ok: false, error: 'No module named readmany_daemon' };
    },
  };
  return { host, probes };
}

function logger() {
  const lines: string[] = [];
  return {
    lines,
    log: {
      info: (m: string) => lines.push(`info ${m}`),
      warn: (m: string) => lines.push(`warn ${m}`),
      error: (m: string) => lines.push(`error ${m}`),
    },
  };
}

const ok = (version = 'readmany 0.1.0'): VersionProbe => ({ ok: true, version });
const settings = (s: Partial<Settings>): Settings => ({ ...DEFAULTS, ...s });

describe('findServer: the documented order', () => {
  test('1. readmany.path wins over the interpreter and PATH', async () => {
    const { host, probes } = machine({
      files: ['/opt/rm/bin/readmany', '/usr/bin/python3', '/usr/bin/readmany'],
      versions: {
        '/opt/rm/bin/readmany --version': ok(),
        '/usr/bin/python3 -m readmany_daemon --version': ok(),
        '/usr/bin/readmany --version': ok(),
      },
    });
    const { log, lines } = logger();
    const found = await findServer(settings({ path: ['/opt/rm/bin/readmany'], interpreter: ['/usr/bin/python3'] }), host, log);
    assert.deepEqual(found, { command: '/opt/rm/bin/readmany', args: ['lsp'], source: 'readmany.path', version: 'readmany 0.1.0', mode: 'lsp' });
    assert.deepEqual(probes, ['/opt/rm/bin/readmany --version']);
    assert.match(lines[0] ?? '', /1\. readmany\.path, 2\. readmany\.interpreter -m readmany_daemon, 3\. readmany on PATH/);
    assert.match(lines.at(-1) ?? '', /^info 1\. readmany\.path: \/opt\/rm\/bin\/readmany is readmany 0\.1\.0; starting \/opt\/rm\/bin\/readmany lsp$/);
  });

  test('path entries are tried in turn; a missing one is logged and skipped', async () => {
    const { host } = machine({ files: ['/b/readmany'], versions: { '/b/readmany --version': ok() } });
    const { log, lines } = logger();
    const found = await findServer(settings({ path: ['/a/readmany', '/b/readmany'] }), host, log);
    assert.equal(found?.command, '/b/readmany');
    assert.ok(lines.some((l) => l === 'warn 1. readmany.path: "/a/readmany" is not an executable file'), lines.join('\n'));
  });

  test('2. readmany.interpreter runs -m readmany_daemon, with its own leading arguments', async () => {
    const { host } = machine({
      files: ['/usr/bin/python3', '/usr/bin/readmany'],
      versions: { '/usr/bin/python3 -X utf8 -m readmany_daemon --version': ok(), '/usr/bin/readmany --version': ok() },
    });
    const { log, lines } = logger();
    const found = await findServer(settings({ interpreter: ['python3', '-X', 'utf8'], shared: false }), host, log);
    assert.deepEqual(found, {
      command: '/usr/bin/python3',
      args: ['-X', 'utf8', '-m', 'readmany_daemon', 'serve', '--stdio'],
      source: 'readmany.interpreter',
      version: 'readmany 0.1.0',
      mode: 'stdio',
    });
    assert.ok(lines.includes('info 1. readmany.path: not set'));
  });

  test('an interpreter without readmany_daemon falls through to PATH, saying why', async () => {
    const { host, probes } = machine({
      files: ['/usr/bin/python3', '/usr/local/bin/readmany'],
      versions: { '/usr/local/bin/readmany --version': ok('readmany 0.2.0') },
    });
    const { log, lines } = logger();
    const found = await findServer(settings({ interpreter: ['/usr/bin/python3'] }), host, log);
    assert.deepEqual(probes, ['/usr/bin/python3 -m readmany_daemon --version', '/usr/local/bin/readmany --version']);
    assert.equal(found?.source, 'PATH');
    assert.equal(found?.version, 'readmany 0.2.0');
    assert.ok(lines.includes('warn 2. readmany.interpreter: /usr/bin/python3 -m readmany_daemon did not run: No module named readmany_daemon'), lines.join('\n'));
  });

  test('3. readmany on PATH, first directory first', async () => {
    const { host } = machine({
      files: ['/usr/local/bin/readmany', '/usr/bin/readmany'],
      versions: { '/usr/local/bin/readmany --version': ok(), '/usr/bin/readmany --version': ok() },
    });
    const { log, lines } = logger();
    const found = await findServer(DEFAULTS, host, log);
    assert.equal(found?.command, '/usr/local/bin/readmany');
    assert.deepEqual(found?.args, ['lsp']);
    assert.deepEqual(
      lines.map((l) => l.split(':')[0]),
      ['info Looking for the readmany server', 'info 1. readmany.path', 'info 2. readmany.interpreter', 'info 3. PATH'],
    );
  });

  test('4. the pipx/uv tool folders, for an extension host whose PATH lacks ~/.local/bin (remote windows)', async () => {
    const { host, probes } = machine({
      env: { PATH: '/usr/bin:/bin', UV_TOOL_BIN_DIR: '/opt/uv-bin' },
      files: ['/home/me/.local/bin/readmany', '/opt/uv-bin/readmany'],
      versions: { '/opt/uv-bin/readmany --version': ok('readmany 0.3.0'), '/home/me/.local/bin/readmany --version': ok() },
    });
    const { log, lines } = logger();
    const found = await findServer(DEFAULTS, host, log);
    assert.equal(found?.command, '/opt/uv-bin/readmany');
    assert.equal(found?.source, 'user install');
    assert.deepEqual(found?.args, ['lsp']);
    assert.deepEqual(probes, ['/opt/uv-bin/readmany --version']);
    assert.ok(lines.includes('info 3. PATH: no readmany executable on PATH'), lines.join('\n'));
    assert.match(lines.at(-1) ?? '', /^info 4\. pipx\/uv tool folders: \/opt\/uv-bin\/readmany is readmany 0\.3\.0; starting/);

    const home = machine({ env: { PATH: '/usr/bin' }, files: ['/home/me/.local/bin/readmany'], versions: { '/home/me/.local/bin/readmany --version': ok() } });
    assert.equal((await findServer(DEFAULTS, home.host, logger().log))?.command, '/home/me/.local/bin/readmany');
  });

  test('nothing found: undefined, and an error line that says how to install', async () => {
    const { host } = machine({});
    const { log, lines } = logger();
    assert.equal(await findServer(DEFAULTS, host, log), undefined);
    assert.ok(lines.includes('info 3. PATH: no readmany executable on PATH'));
    assert.ok(lines.includes('info 4. pipx/uv tool folders: no readmany in /home/me/.local/bin'), lines.join('\n'));
    assert.equal(lines.at(-1), `error ${NOT_FOUND_HELP}`);
    assert.match(NOT_FOUND_HELP, /pipx install \./);
  });

  test('Windows: `serve --stdio` even when shared, PATHEXT on PATH', async () => {
    const { host } = machine({
      platform: 'win32',
      env: { PATH: 'C:\\Python\\Scripts;C:\\Windows', PATHEXT: '.COM;.EXE' },
      files: ['C:\\Python\\Scripts\\readmany.EXE'],
      versions: { 'C:\\Python\\Scripts\\readmany.EXE --version': ok() },
    });
    const { log, lines } = logger();
    const found = await findServer(DEFAULTS, host, log);
    assert.equal(found?.command, 'C:\\Python\\Scripts\\readmany.EXE');
    assert.deepEqual(found?.args, ['serve', '--stdio']);
    assert.match(lines[0] ?? '', /needs unix sockets/);
  });
});

describe('discovery helpers', () => {
  test('expandVariables', () => {
    const host = { env: { VENV: '/v' }, home: '/home/me', workspaceFolder: '/ws' };
    assert.equal(expandVariables('${workspaceFolder}/.venv/bin/readmany', host), '/ws/.venv/bin/readmany');
    assert.equal(expandVariables('${userHome}/x', host), '/home/me/x');
    assert.equal(expandVariables('~/.local/bin/readmany', host), '/home/me/.local/bin/readmany');
    assert.equal(expandVariables('${env:VENV}/bin/python', host), '/v/bin/python');
    assert.equal(expandVariables('${env:NOPE}x', host), 'x');
    assert.equal(expandVariables('${workspaceFolder}', { env: {}, home: '/h' }), '${workspaceFolder}');
  });

  test('resolveExecutable: bare names on PATH, relative paths from the workspace folder', () => {
    const { host } = machine({ files: ['/usr/bin/python3', '/ws/.venv/bin/readmany'], workspaceFolder: '/ws' });
    assert.equal(resolveExecutable('python3', host), '/usr/bin/python3');
    assert.equal(resolveExecutable('.venv/bin/readmany', host), '/ws/.venv/bin/readmany');
    assert.equal(resolveExecutable('${workspaceFolder}/.venv/bin/readmany', host), '/ws/.venv/bin/readmany');
    assert.equal(resolveExecutable('/nope/readmany', host), undefined);
    assert.equal(resolveExecutable('', host), undefined);
  });

  test('which and serverMode', () => {
    const { host } = machine({ files: ['/usr/bin/readmany'] });
    assert.equal(which('readmany', host), '/usr/bin/readmany');
    assert.equal(which('other', host), undefined);
    assert.equal(serverMode(true, 'linux'), 'lsp');
    assert.equal(serverMode(true, 'darwin'), 'lsp');
    assert.equal(serverMode(false, 'linux'), 'stdio');
    assert.equal(serverMode(true, 'win32'), 'stdio');
  });
});
