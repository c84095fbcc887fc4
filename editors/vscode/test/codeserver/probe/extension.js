// The code-server test's probe: "readmany probe: Report" writes what the extension host
// sees to $READMANY_PROBE_OUT as JSON — the readmany extension's state and API, the
// Language Model Tool in vscode.lm.tools and what vscode.lm.invokeTool answers.
'use strict';
const vscode = require('vscode');
const fs = require('fs');

const EXTENSION = 'readmany.readmany-vscode';
const TOOL = 'readmany_read_many_files';

async function attempt(fn) {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    return { ok: false, error: String(error && error.message ? error.message : error) };
  }
}

function text(result) {
  return (result.content || []).map((p) => (typeof p.value === 'string' ? p.value : '')).join('');
}

async function report() {
  const ext = vscode.extensions.getExtension(EXTENSION);
  const out = { installed: !!ext, vscodeVersion: vscode.version, remoteName: vscode.env.remoteName ?? null };
  if (!ext) return out;
  const api = await ext.activate();
  out.active = ext.isActive;
  out.apiKeys = Object.keys(api || {}).sort();
  out.status = await attempt(() => api.status());
  out.read = await attempt(async () => {
    const r = await api.read({ paths: ['a.txt'] });
    return { llmContent: r.llmContent, files: r.files.map((f) => f.path) };
  });
  out.tools = (vscode.lm && vscode.lm.tools ? vscode.lm.tools : []).map((t) => t.name).filter((n) => n.startsWith('readmany'));
  out.invokeTool = await attempt(async () => {
    const source = new vscode.CancellationTokenSource();
    const r = await vscode.lm.invokeTool(TOOL, { input: { paths: ['a.txt', 'src/'] }, toolInvocationToken: undefined }, source.token);
    return text(r);
  });
  return out;
}

exports.activate = (context) => {
  context.subscriptions.push(
    vscode.commands.registerCommand('readmanyProbe.report', async () => {
      const out = await report();
      fs.writeFileSync(process.env.READMANY_PROBE_OUT, JSON.stringify(out, null, 2));
      return out;
    }),
  );
};
exports.deactivate = () => {};
