// Gemini CLI's `read_many_files` tool, driven outside the CLI for bench/bench_peers.py.
//
// A real `Config` from @google/gemini-cli-core (targetDir = the tree; no model, no
// network: telemetry and usage statistics off, no MCP servers, HOME pointed at a private
// folder by the caller) and the tool constructed as `new ReadManyFilesTool(config,
// config.getMessageBus())` (0.61 no longer registers it in the ToolRegistry; taken from
// there when a version does), then `tool.build(params).execute({abortSignal})`.
//
//   node gemini_read_many.mjs --target DIR --include GLOB [--include GLOB …]
//       one shot: prints the llmContent parts (strings) to stdout, as the model gets them.
//   node gemini_read_many.mjs --target DIR --serve
//       warm: one JSON request a line on stdin, {"id", "include": [...], "labels"?: bool,
//       "dump"?: path}; one JSON answer a line on stdout: {"id", "ms" (build+execute, in
//       this process), "chars", "parts", "files" (labels parsed from the separators, when
//       "labels"), "truncated" (files with the tool's truncation warning), "skipped"
//       (returnDisplay.skipped), "error"?}. "dump" writes the llmContent there.
//
// The separator is `--- {absolute path} ---`; the tool ends with `--- End of content ---`.

import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as readline from 'node:readline';

// The core logs through console.log/info/debug: keep stdout for the answer only.
for (const name of ['log', 'info', 'debug', 'warn']) console[name] = console.error;
const core = await import('@google/gemini-cli-core');

const SEPARATOR = /^--- (.+) ---$/gm;
const TRUNCATED = '[WARNING: This file was truncated.';

function parseArgs(argv) {
  const args = { include: [], serve: false, target: process.cwd() };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--target') args.target = argv[++i];
    else if (a === '--include') args.include.push(argv[++i]);
    else if (a === '--serve') args.serve = true;
    else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

async function makeTool(target) {
  const config = new core.Config({
    sessionId: randomUUID(),
    targetDir: target,
    cwd: target,
    debugMode: false,
    model: 'gemini-2.5-pro',
    interactive: false,
    telemetry: { enabled: false },
    usageStatisticsEnabled: false,
    mcpServers: {},
    checkpointing: false,
    fileFiltering: { respectGitIgnore: true, respectGeminiIgnore: true, enableFileWatcher: false },
  });
  await config.initialize();
  const registry = config.getToolRegistry();
  let tool = registry?.getTool?.(core.ReadManyFilesTool.Name);
  if (!tool) tool = new core.ReadManyFilesTool(config, config.getMessageBus());
  return { config, tool };
}

async function run(tool, include) {
  const controller = new AbortController();
  const invocation = tool.build({ include });
  return invocation.execute({ abortSignal: controller.signal });
}

function textParts(result) {
  const parts = Array.isArray(result.llmContent) ? result.llmContent : [result.llmContent];
  return parts.map((p) => (typeof p === 'string' ? p : JSON.stringify(p)));
}

function describe(result, wantLabels) {
  const parts = textParts(result);
  let chars = 0;
  const files = [];
  let truncated = 0;
  for (const part of parts) {
    chars += part.length;
    if (part.includes(TRUNCATED)) truncated += 1;
    if (wantLabels) {
      // Each file is one part starting with its separator line.
      const nl = part.indexOf('\n');
      const m = /^--- (.+) ---$/.exec(nl < 0 ? part : part.slice(0, nl));
      if (m && m[1] !== 'End of content') files.push(m[1]);
    }
  }
  const display = result.returnDisplay || {};
  return {
    chars,
    parts: parts.length,
    files: wantLabels ? files : undefined,
    truncated,
    skipped: Array.isArray(display.skipped) ? display.skipped.slice(0, 50) : [],
    skippedCount: Array.isArray(display.skipped) ? display.skipped.length : 0,
    error: result.error ? result.error.message : undefined,
  };
}

async function serve(tool) {
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  process.stdout.write(JSON.stringify({ ready: true, version: packageVersion() }) + '\n');
  for await (const line of rl) {
    if (!line.trim()) continue;
    const req = JSON.parse(line);
    let answer;
    try {
      const t0 = performance.now();
      const result = await run(tool, req.include);
      const ms = performance.now() - t0;
      answer = { id: req.id, ms, ...describe(result, !!req.labels) };
      if (req.dump) {
        const fd = fs.openSync(req.dump, 'w');
        for (const part of textParts(result)) fs.writeSync(fd, part);
        fs.closeSync(fd);
      }
    } catch (err) {
      answer = { id: req.id, ms: -1, error: String(err && err.stack ? err.stack : err) };
    }
    process.stdout.write(JSON.stringify(answer) + '\n');
  }
}

function packageVersion() {
  try {
    const url = new URL('./node_modules/@google/gemini-cli-core/package.json', import.meta.url);
    return JSON.parse(fs.readFileSync(url, 'utf8')).version;
  } catch {
    return 'unknown';
  }
}

async function oneShot(tool, include) {
  const result = await run(tool, include);
  // Write part by part: the whole answer can pass V8's maximum string length.
  for (const part of textParts(result)) {
    if (!process.stdout.write(part)) {
      await new Promise((resolve) => process.stdout.once('drain', resolve));
    }
  }
  if (result.error) process.stderr.write(`error: ${result.error.message}\n`);
}

const args = parseArgs(process.argv.slice(2));
const { tool } = await makeTool(args.target);
if (args.serve) {
  await serve(tool);
} else {
  await oneShot(tool, args.include);
}
// Config may leave timers or handles behind: end explicitly once stdout is flushed.
process.stdout.write('', () => process.exit(0));
