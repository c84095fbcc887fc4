/**
 * Finding the readmany server, in a documented order, each step logged:
 *
 *   1. `readmany.path`: each entry in turn (variables expanded, relative to the first
 *      workspace folder, a bare name looked up on PATH);
 *   2. `readmany.interpreter`: that Python with `-m readmany_daemon`;
 *   3. `readmany` on PATH;
 *   4. the folders pipx and `uv tool` install into (`$PIPX_BIN_DIR`, `$UV_TOOL_BIN_DIR`,
 *      `$XDG_BIN_HOME`, `~/.local/bin`): a remote window's extension host (code-server
 *      started as a service, Remote-SSH's server, a dev container's) often runs with a
 *      PATH that lacks the user's `~/.local/bin`.
 *
 * A candidate is taken when it exists and answers `--version`. The server is then
 * started as `readmany lsp` (the shared warm daemon; `readmany.shared`, the default) or
 * `readmany serve --stdio` (a server of this window's own).
 *
 * Pure logic over a `DiscoveryHost` (file checks, PATH, running `--version`), so tests
 * script the machine; `nodeHost.ts` is the real one.
 */
import * as path from 'path';
import type { Settings } from './settings';

export type ServerSource = 'readmany.path' | 'readmany.interpreter' | 'PATH' | 'user install';

export interface ServerCommand {
  command: string;
  args: string[];
  source: ServerSource;
  /** what `--version` printed, e.g. `readmany 0.1.0` */
  version: string;
  /** `lsp` (shared daemon) or `serve --stdio` */
  mode: 'lsp' | 'stdio';
}

export type VersionProbe = { ok: true; version: string } | { ok: false; error: string };

export interface DiscoveryHost {
  platform: string;
  env: Record<string, string | undefined>;
  home: string;
  /** fsPath of the first workspace folder, if any */
  workspaceFolder?: string;
  /** an existing regular file that may be executed */
  isExecutableFile(file: string): boolean;
  /** run `command ...args` (args end with `--version`) and report what it printed */
  version(command: string, args: string[]): Promise<VersionProbe>;
}

export interface DiscoveryLog {
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const NOT_FOUND_HELP =
  'readmany was not found. Install the readmany-daemon Python package (`pipx install .` or `uv tool install .` ' +
  'in a readmany checkout, or `pip install` it into a Python you name in `readmany.interpreter`), or set ' +
  '`readmany.path` to the `readmany` executable. In a remote window (SSH, dev container, code-server) install ' +
  'it on the remote machine and set these in the Remote settings.';

/** Step 4's folders, in order, without duplicates: where `pipx install` and
 * `uv tool install` put executables (pipx: `$PIPX_BIN_DIR`, default `~/.local/bin`; uv:
 * `$UV_TOOL_BIN_DIR`, else `$XDG_BIN_HOME`, else `~/.local/bin`). */
export function userBinDirs(host: Pick<DiscoveryHost, 'platform' | 'env' | 'home'>): string[] {
  const p = pathApi(host);
  const dirs = [host.env.PIPX_BIN_DIR, host.env.UV_TOOL_BIN_DIR, host.env.XDG_BIN_HOME, p.join(host.home, '.local', 'bin')];
  return [...new Set(dirs.filter((d): d is string => typeof d === 'string' && p.isAbsolute(d)))];
}

function pathApi(host: Pick<DiscoveryHost, 'platform'>): path.PlatformPath {
  return host.platform === 'win32' ? path.win32 : path.posix;
}

/** `${workspaceFolder}`, `${userHome}`, `${env:NAME}` and a leading `~` expanded. */
export function expandVariables(value: string, host: Pick<DiscoveryHost, 'env' | 'home' | 'workspaceFolder'>): string {
  let out = value.replace(/\$\{(workspaceFolder|userHome|env:([^}]+))\}/g, (match: string, name: string, envName?: string) => {
    if (name === 'userHome') return host.home;
    if (name === 'workspaceFolder') return host.workspaceFolder ?? match;
    return host.env[envName ?? ''] ?? '';
  });
  if (out === '~' || out.startsWith('~/') || out.startsWith('~\\')) out = host.home + out.slice(1);
  return out;
}

/** The first `name` on PATH (with PATHEXT extensions on Windows), or undefined. */
export function which(name: string, host: DiscoveryHost): string | undefined {
  const p = pathApi(host);
  const win = host.platform === 'win32';
  const dirs = (host.env.PATH ?? host.env.Path ?? '').split(win ? ';' : ':').filter((d) => d !== '');
  const exts = win ? ['', ...(host.env.PATHEXT ?? '.COM;.EXE;.BAT;.CMD').split(';').filter((e) => e !== '')] : [''];
  for (const dir of dirs) {
    for (const ext of exts) {
      const candidate = p.join(dir, name + ext);
      if (host.isExecutableFile(candidate)) return candidate;
    }
  }
  return undefined;
}

/** An executable named by a setting: a bare name is looked up on PATH, a relative path
 * resolves against the first workspace folder. */
export function resolveExecutable(value: string, host: DiscoveryHost): string | undefined {
  const p = pathApi(host);
  const expanded = expandVariables(value, host);
  if (expanded === '') return undefined;
  const hasSeparator = expanded.includes('/') || (host.platform === 'win32' && expanded.includes('\\'));
  if (!hasSeparator) return which(expanded, host);
  const absolute = p.isAbsolute(expanded) ? expanded : p.resolve(host.workspaceFolder ?? '', expanded);
  if (host.isExecutableFile(absolute)) return absolute;
  if (host.platform === 'win32' && !p.extname(absolute)) {
    for (const ext of ['.exe', '.cmd', '.bat']) {
      if (host.isExecutableFile(absolute + ext)) return absolute + ext;
    }
  }
  return undefined;
}

/** The server's subcommand: `lsp` (shared daemon) or `serve --stdio`. Windows has no
 * unix sockets, so it always gets `serve --stdio` (PROTOCOL §1). */
export function serverMode(shared: boolean, platform: string): ServerCommand['mode'] {
  return shared && platform !== 'win32' ? 'lsp' : 'stdio';
}

export function modeArgs(mode: ServerCommand['mode']): string[] {
  return mode === 'lsp' ? ['lsp'] : ['serve', '--stdio'];
}

export function describeCommand(command: string, args: readonly string[]): string {
  return [command, ...args].map((a) => (/[\s"']/.test(a) ? JSON.stringify(a) : a)).join(' ');
}

/**
 * Find the server in the documented order; logs every step through `log`. Returns the
 * command to start, or undefined (and an error line with install help) when no step
 * found a working server.
 */
export async function findServer(settings: Settings, host: DiscoveryHost, log: DiscoveryLog): Promise<ServerCommand | undefined> {
  const mode = serverMode(settings.shared, host.platform);
  if (settings.shared && mode !== 'lsp') {
    log.info('readmany.shared is on, but the shared daemon needs unix sockets: starting `serve --stdio` on Windows');
  }
  const tail = modeArgs(mode);
  log.info(
    'Looking for the readmany server: 1. readmany.path, 2. readmany.interpreter -m readmany_daemon, 3. readmany on PATH, ' +
      '4. the pipx/uv tool folders',
  );

  async function attempt(step: string, command: string, base: string[], source: ServerSource): Promise<ServerCommand | undefined> {
    const shown = describeCommand(command, base);
    const probe = await host.version(command, [...base, '--version']);
    if (!probe.ok) {
      log.warn(`${step}: ${shown} did not run: ${probe.error}`);
      return undefined;
    }
    const found: ServerCommand = { command, args: [...base, ...tail], source, version: probe.version, mode };
    log.info(`${step}: ${shown} is ${probe.version}; starting ${describeCommand(command, found.args)}`);
    return found;
  }

  // 1. readmany.path
  if (settings.path.length === 0) {
    log.info('1. readmany.path: not set');
  }
  for (const entry of settings.path) {
    const resolved = resolveExecutable(entry, host);
    if (resolved === undefined) {
      log.warn(`1. readmany.path: ${JSON.stringify(entry)} is not an executable file${entry.includes('/') ? '' : ' on PATH'}`);
      continue;
    }
    const found = await attempt('1. readmany.path', resolved, [], 'readmany.path');
    if (found) return found;
  }

  // 2. readmany.interpreter
  const [interpreter, ...interpreterArgs] = settings.interpreter;
  if (interpreter === undefined || interpreter === '') {
    log.info('2. readmany.interpreter: not set');
  } else {
    const resolved = resolveExecutable(interpreter, host);
    if (resolved === undefined) {
      log.warn(`2. readmany.interpreter: ${JSON.stringify(interpreter)} is not an executable file`);
    } else {
      const base = [...interpreterArgs.map((a) => expandVariables(a, host)), '-m', 'readmany_daemon'];
      const found = await attempt('2. readmany.interpreter', resolved, base, 'readmany.interpreter');
      if (found) return found;
    }
  }

  // 3. readmany on PATH
  const onPath = which('readmany', host);
  if (onPath === undefined) {
    log.info('3. PATH: no readmany executable on PATH');
  } else {
    const found = await attempt('3. PATH', onPath, [], 'PATH');
    if (found) return found;
  }

  // 4. where pipx and uv tool install
  const exe = host.platform === 'win32' ? 'readmany.exe' : 'readmany';
  const dirs = userBinDirs(host);
  const installed = dirs.map((d) => pathApi(host).join(d, exe)).filter((f) => f !== onPath && host.isExecutableFile(f));
  if (installed.length === 0) {
    log.info(`4. pipx/uv tool folders: no readmany in ${dirs.join(', ')}`);
  }
  for (const candidate of installed) {
    const found = await attempt('4. pipx/uv tool folders', candidate, [], 'user install');
    if (found) return found;
  }

  log.error(NOT_FOUND_HELP);
  return undefined;
}
