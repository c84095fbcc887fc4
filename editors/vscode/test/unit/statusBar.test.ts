import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { ServerCommand } from '../../src/discovery';
import type { StatusResult } from '../../src/protocol';
import { describeStatus, formatBytes, formatDuration, StatusBar, statusWarnings, type StatusBarApi, type StatusInput } from '../../src/statusBar';
import { createFakeVscode, MarkdownString, ThemeColor } from '../fake/vscode';

const shared: ServerCommand = { command: '/usr/bin/readmany', args: ['lsp'], source: 'PATH', version: 'readmany 0.1.0', mode: 'lsp' };
const own: ServerCommand = { ...shared, args: ['serve', '--stdio'], mode: 'stdio', source: 'readmany.path' };

function status(over: Partial<StatusResult> = {}): StatusResult {
  return {
    roots: [{ root: '/w/app', name: 'app', files: 1234, indexed: true, watcher: { state: 'running', warnings: [] } }],
    fileCount: 1234,
    cache: { bytes: 5 * 1024 * 1024, hitRate: 0.93 },
    watcher: { state: 'running', warnings: [] },
    uptime: 7500,
    pid: 4242,
    version: '0.1.0',
    connections: 3,
    ...over,
  };
}

describe('describeStatus', () => {
  test('warm: file count in the text; pid, uptime, folders, cache in the tooltip', () => {
    const view = describeStatus({ state: 'running', server: shared, status: status(), connectedSeconds: 10 });
    assert.equal(view.text, '$(zap) readmany 1,234');
    assert.equal(view.severity, 'ok');
    for (const part of [
      '**readmany 0.1.0** — shared daemon (`readmany lsp`), pid 4242, up 2 h 5 min, 3 connections',
      'Index: **warm**',
      'Daemon: was already warm when this window connected (running 2 h 5 min)',
      '| folder | files | watcher |\n|---|---:|---|\n| app | 1,234 | running |',
      'Cache: 5.0 MB, hit rate 93 %',
      'Server: `/usr/bin/readmany lsp` (found by PATH)',
    ]) {
      assert.ok(view.tooltip.includes(part), `tooltip has ${JSON.stringify(part)}:\n${view.tooltip}`);
    }
  });

  test('a daemon this window started is cold; a folder still indexing says so', () => {
    const started = describeStatus({ state: 'running', server: shared, status: status({ uptime: 3 }), connectedSeconds: 2.5 });
    assert.ok(started.tooltip.includes('Daemon: started cold by this window'));
    const indexing = describeStatus({
      state: 'running',
      server: own,
      status: status({ fileCount: 0, roots: [{ root: '/w/app', name: 'app', files: null, indexed: false }] }),
    });
    assert.equal(indexing.text, '$(loading~spin) readmany: indexing');
    assert.ok(indexing.tooltip.includes('Index: **cold** — indexing app…'));
    assert.ok(indexing.tooltip.includes('server of this window (`readmany serve --stdio`)'));
    assert.ok(indexing.tooltip.includes('| app | indexing | off |'));
    assert.ok(!indexing.tooltip.includes('Daemon:'));
  });

  test('watcher warnings: warning icon and colour, each warning listed', () => {
    const s = status({
      watcher: { state: 'degraded', warnings: ['/w/app: inotify watch limit reached (max_user_watches=8192)'] },
      roots: [{ root: '/w/app', name: 'app', files: 10, indexed: true, warnings: ['root inside an ignored folder'] }],
      fileCount: 10,
    });
    assert.deepEqual(statusWarnings(s), ['/w/app: inotify watch limit reached (max_user_watches=8192)', 'app: root inside an ignored folder']);
    const view = describeStatus({ state: 'running', server: shared, status: s });
    assert.equal(view.text, '$(warning) readmany 10');
    assert.equal(view.severity, 'warning');
    assert.ok(view.tooltip.includes('**2 warnings:**\n- /w/app: inotify watch limit reached'));
  });

  test('not found, failed, starting, stopped', () => {
    const notFound = describeStatus({ state: 'notFound', error: 'install it' });
    assert.equal(notFound.text, '$(error) readmany');
    assert.equal(notFound.severity, 'error');
    assert.match(notFound.tooltip, /not found\.\*\* install it/);
    assert.match(describeStatus({ state: 'failed', error: 'exit 1', server: shared }).tooltip, /failed:\*\* exit 1/);
    assert.equal(describeStatus({ state: 'starting', server: shared }).text, '$(loading~spin) readmany');
    assert.equal(describeStatus({ state: 'running', server: shared }).text, '$(loading~spin) readmany');
    assert.equal(describeStatus({ state: 'stopped' }).text, '$(circle-slash) readmany');
  });

  test('formatDuration, formatBytes', () => {
    assert.deepEqual([5, 59.6, 61, 3599, 3600, 90000].map(formatDuration), ['5 s', '1 min', '1 min', '59 min', '1 h 0 min', '1 d 1 h']);
    assert.deepEqual([0, 1023, 1024, 1536 * 1024, 3 * 1024 ** 3].map(formatBytes), ['0 B', '1023 B', '1.0 KB', '1.5 MB', '3.0 GB']);
  });
});

describe('StatusBar', () => {
  function timers() {
    const scheduled: { fn: () => void; ms: number; cleared: boolean }[] = [];
    const once: { fn: () => void; ms: number; cleared: boolean }[] = [];
    const add = (list: typeof scheduled) => (fn: () => void, ms: number) => {
      const t = { fn, ms, cleared: false };
      list.push(t);
      return t;
    };
    const clear = (h: unknown) => {
      (h as { cleared: boolean }).cleared = true;
    };
    return {
      scheduled,
      once,
      timers: { setInterval: add(scheduled), clearInterval: clear, setTimeout: add(once), clearTimeout: clear },
    };
  }

  test('shows the fetched state, refreshes on its period, clicks run the refresh command', async () => {
    const fake = createFakeVscode();
    const t = timers();
    let fetched = 0;
    const bar = new StatusBar(
      fake.vscode as unknown as StatusBarApi,
      async (): Promise<StatusInput> => {
        fetched += 1;
        return { state: 'running', server: shared, status: status({ fileCount: fetched }) };
      },
      t.timers,
    );
    const item = fake.recorded.statusItems[0];
    assert.ok(item?.visible);
    assert.equal(item?.command, 'readmany.refreshStatus');
    assert.equal(item?.text, '$(loading~spin) readmany');
    await bar.refresh();
    assert.equal(item?.text, '$(zap) readmany 1');
    assert.ok(item?.tooltip instanceof MarkdownString);

    bar.setPeriod(30);
    assert.equal(t.scheduled[0]?.ms, 30000);
    t.scheduled[0]?.fn();
    await bar.refresh();
    assert.equal(fetched, 2, 'the timer refresh and the explicit one share a fetch');
    bar.setPeriod(0);
    assert.ok(t.scheduled[0]?.cleared);
    assert.equal(t.scheduled.length, 1);

    bar.dispose();
    assert.ok(item?.disposed);
  });

  test('while starting or indexing it asks again after a second, until warm', async () => {
    const fake = createFakeVscode();
    const t = timers();
    const answers: StatusInput[] = [
      { state: 'running', server: shared, status: status({ fileCount: 0, roots: [{ root: '/w', name: 'w', files: null, indexed: false }] }) },
      { state: 'running', server: shared, status: status() },
    ];
    const bar = new StatusBar(fake.vscode as unknown as StatusBarApi, async () => answers.shift() ?? assert.fail('no more'), t.timers);
    assert.equal(t.once.length, 1, 'starting: a quick refresh is scheduled');
    assert.equal(t.once[0]?.ms, 1000);
    t.once[0]?.fn();
    await bar.refresh();
    assert.equal(fake.recorded.statusItems[0]?.text, '$(loading~spin) readmany: indexing');
    assert.equal(t.once.length, 2, 'indexing: another one');
    t.once[1]?.fn();
    await bar.refresh();
    assert.equal(fake.recorded.statusItems[0]?.text, '$(zap) readmany 1,234');
    assert.equal(t.once.length, 2, 'warm: no more quick refreshes');
    bar.dispose();
  });

  test('a failing fetch shows the error with the error colour', async () => {
    const fake = createFakeVscode();
    const bar = new StatusBar(fake.vscode as unknown as StatusBarApi, async () => {
      throw new Error('connection closed');
    }, timers().timers);
    await bar.refresh();
    const item = fake.recorded.statusItems[0];
    assert.equal(item?.text, '$(error) readmany');
    assert.deepEqual(item?.backgroundColor, new ThemeColor('statusBarItem.errorBackground'));
    assert.match((item?.tooltip as MarkdownString).value, /connection closed/);
  });
});
