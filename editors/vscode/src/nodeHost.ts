/** The real `DiscoveryHost`: the file system, this process's environment, and running
 * a candidate's `--version` (5 s limit). */
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import type { DiscoveryHost, VersionProbe } from './discovery';

export function isExecutableFile(file: string): boolean {
  try {
    if (!fs.statSync(file).isFile()) return false;
    if (process.platform !== 'win32') fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function runVersion(command: string, args: string[], timeoutMs = 5000): Promise<VersionProbe> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: timeoutMs, windowsHide: true, encoding: 'utf8' }, (error, stdout, stderr) => {
      const out = `${stdout}`.trim();
      if (error) {
        const detail = `${stderr}`.trim().split('\n').filter((l) => l !== '').pop() ?? error.message;
        resolve({ ok: false, error: detail });
      } else if (!/\breadmany\b/i.test(out)) {
        resolve({ ok: false, error: `unexpected --version output ${JSON.stringify(out.slice(0, 80))}` });
      } else {
        resolve({ ok: true, version: out.split('\n')[0] ?? out });
      }
    });
  });
}

export function nodeHost(workspaceFolder: string | undefined): DiscoveryHost {
  return {
    platform: process.platform,
    env: process.env,
    home: os.homedir(),
    workspaceFolder,
    isExecutableFile,
    version: runVersion,
  };
}
