import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { NOT_FOUND_HELP, type ServerCommand } from '../../src/discovery';
import { NotRunningError, ServerManager } from '../../src/server';
import type { ServerState } from '../../src/statusBar';
import { ScriptedClient } from '../helpers';

const server: ServerCommand = { command: '/usr/bin/readmany', args: ['lsp'], source: 'PATH', version: 'readmany 0.1.0', mode: 'lsp' };

function manager(opts: { found?: ServerCommand | undefined; clients?: ScriptedClient[] } = {}) {
  const lines: string[] = [];
  const created: ScriptedClient[] = [];
  const clients = [...(opts.clients ?? [])];
  const states: ServerState[] = [];
  const m = new ServerManager({
    discover: async () => ('found' in opts ? opts.found : server),
    createClient: () => {
      const c = clients.shift() ?? new ScriptedClient({ 'readMany/status': () => ({ n: created.length }) });
      created.push(c);
      return c;
    },
    log: { info: (s) => lines.push(`info ${s}`), warn: (s) => lines.push(`warn ${s}`), error: (s) => lines.push(`error ${s}`) },
    now: () => 1000,
  });
  m.onDidChangeState((s) => states.push(s));
  return { m, lines, created, states };
}

describe('ServerManager', () => {
  test('start: discover, start the client, running', async () => {
    const { m, created, states } = manager();
    await m.start();
    assert.equal(m.state, 'running');
    assert.deepEqual(states, ['starting', 'running']);
    assert.equal(m.server, server);
    assert.equal(m.connectedAt, 1000);
    assert.equal(created[0]?.started, 1);
    assert.deepEqual(await m.request('readMany/status', {}), { n: 1 });
  });

  test('a request made while starting waits for the start', async () => {
    const { m } = manager();
    const starting = m.start();
    const answer = m.request('readMany/status', {});
    await starting;
    assert.deepEqual(await answer, { n: 1 });
  });

  test('not found: the state says so and requests fail with the install help', async () => {
    const { m, states } = manager({ found: undefined });
    await m.start();
    assert.equal(m.state, 'notFound');
    assert.deepEqual(states, ['starting', 'notFound']);
    await assert.rejects(m.request('readMany/read', {}), (e: unknown) => e instanceof NotRunningError && e.message === NOT_FOUND_HELP);
  });

  test('a client that cannot start: failed, logged, stopped again', async () => {
    const broken = new ScriptedClient({}, new Error('spawn EACCES'));
    const { m, lines } = manager({ clients: [broken] });
    await m.start();
    assert.equal(m.state, 'failed');
    assert.equal(m.error, 'spawn EACCES');
    assert.equal(broken.stopped, 1);
    assert.ok(lines.includes('error the readmany server did not start: spawn EACCES'));
    await assert.rejects(m.request('readMany/read', {}), /not running \(spawn EACCES\)/);
  });

  test('restart stops the old client before starting a new one, and rediscovers', async () => {
    const { m, created, states, lines } = manager();
    await m.start();
    await m.restart();
    assert.equal(created.length, 2);
    assert.equal(created[0]?.stopped, 1);
    assert.equal(created[1]?.started, 1);
    assert.deepEqual(states, ['starting', 'running', 'stopped', 'starting', 'running']);
    assert.ok(lines.includes('info Restarting the readmany server'));
    assert.deepEqual(await m.request('readMany/status', {}), { n: 2 });
  });

  test('a server that dies for good: failed, and requests say so', async () => {
    const { m, created } = manager();
    await m.start();
    created[0]?.crash();
    assert.equal(m.state, 'failed');
    await assert.rejects(m.request('readMany/status', {}), /stopped unexpectedly/);
  });

  test('notify goes to the running client; nothing when stopped', async () => {
    const { m, created } = manager();
    await m.notify('workspace/didChangeConfiguration', { settings: {} });
    await m.start();
    await m.notify('workspace/didChangeConfiguration', { settings: { readmany: {} } });
    assert.deepEqual(created[0]?.notifications, [{ method: 'workspace/didChangeConfiguration', params: { settings: { readmany: {} } } }]);
    await m.stop();
    assert.equal(m.state, 'stopped');
    await assert.rejects(m.request('readMany/status', {}), /not running/);
  });
});
