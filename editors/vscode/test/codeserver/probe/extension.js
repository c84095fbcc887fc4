// The code-server test's probe: "readmany probe: Report" writes what the extension host
// sees to $READMANY_PROBE_OUT as JSON — the readmany extension's state and API, the
// Language Model Tool in vscode.lm.tools and what vscode.lm.invokeTool answers, and the
// MCP server the extension registered: started through VS Code's own command, its
// tools as vscode.lm.tools lists them, and what one of them answers.
// "readmany probe: Both Tools" sets readmany.mcpServer.alsoLanguageModelTool;
// "readmany probe: Tool Shown" is in the Command Palette only while the context key of
// the tool contribution's `when` clause is true.
'use strict';
const vscode = require('vscode');
const fs = require('fs');

const EXTENSION = 'readmany.readmany-vscode';
const TOOL = 'readmany_read_many_files';
// VS Code's id of a server an extension's provider gives: `<extension id>/<label>`.
const MCP_SERVER = `${EXTENSION}/readmany`;

function withTimeout(promise, ms, what) {
  return Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: no answer in ${ms} ms`)), ms))]);
}

async function attempt(fn) {
  try {
    return { ok: true, value: await fn() };
  } catch (error) {
    return { ok: false, error: String(error && error.message ? error.message : error) };
  }
}

/** The text of a tool result: text parts, and data parts of a text type (MCP results). */
function text(result) {
  const decode = (p) => (p.data instanceof Uint8Array && /^(text\/|application\/json)/.test(p.mimeType ?? '') ? Buffer.from(p.data).toString('utf8') : '');
  return (result.content || []).map((p) => (typeof p.value === 'string' ? p.value : decode(p))).join('\n');
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
  if (out.tools.includes(TOOL)) {
    out.invokeTool = await attempt(async () => {
      const source = new vscode.CancellationTokenSource();
      const r = await vscode.lm.invokeTool(TOOL, { input: { paths: ['a.txt', 'src/'] }, toolInvocationToken: undefined }, source.token);
      return text(r);
    });
  }
  out.mcpStart = await attempt(() =>
    withTimeout(vscode.commands.executeCommand('workbench.mcp.startServer', MCP_SERVER, { waitForLiveTools: true }), 60000, 'workbench.mcp.startServer'),
  );
  out.allTools = (vscode.lm.tools || []).map((t) => t.name);
  out.mcpTools = (vscode.lm.tools || []).filter((t) => /read_many_files/.test(t.name) && t.name !== TOOL).map((t) => t.name);
  if (out.mcpTools.length > 0) {
    out.invokeMcpTool = await attempt(async () => {
      const source = new vscode.CancellationTokenSource();
      const r = await withTimeout(
        vscode.lm.invokeTool(out.mcpTools[0], { input: { paths: ['a.txt'] }, toolInvocationToken: undefined }, source.token),
        60000,
        'invokeTool',
      );
      return text(r);
    });
  }
  return out;
}

exports.activate = (context) => {
  context.subscriptions.push(
    vscode.commands.registerCommand('readmanyProbe.report', async () => {
      const out = await report();
      fs.writeFileSync(process.env.READMANY_PROBE_OUT, JSON.stringify(out, null, 2));
      return out;
    }),
    vscode.commands.registerCommand('readmanyProbe.toolShown', () => true),
    vscode.commands.registerCommand('readmanyProbe.bothTools', async () => {
      await vscode.workspace.getConfiguration('readmany').update('mcpServer.alsoLanguageModelTool', true, vscode.ConfigurationTarget.Global);
    }),
  );
};
exports.deactivate = () => {};
