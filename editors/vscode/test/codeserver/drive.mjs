// Drives a running code-server through headless Chromium (puppeteer-core) as a person
// would: waits for the readmany status-bar item, lists the MCP servers (MCP: List
// Servers), runs every "Read Many Files" palette command, and asks the probe extension
// (probe/) for what only the extension host sees; last, asks for both read tools.
// Prints one JSON object of observations on stdout; tests/e2e/test_editor_codeserver.py
// asserts on it. On an error, a screenshot goes to the artifacts folder and its path is
// printed on stderr.
//
//   node drive.mjs   with READMANY_DRIVE = JSON {url, chromium, puppeteer, artifacts,
//                    probeOut, timeoutMs}
import { createRequire } from 'node:module';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const cfg = JSON.parse(process.env.READMANY_DRIVE);
const require = createRequire(import.meta.url);
const puppeteer = require(cfg.puppeteer);
const timeout = cfg.timeoutMs ?? 60000;
const NBSP = /\u00a0/g; // Monaco renders spaces as U+00A0
const out = { steps: [] };

const browser = await puppeteer.launch({
  executablePath: cfg.chromium,
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1400,900'],
  defaultViewport: { width: 1400, height: 900 },
});
const origin = new URL(cfg.url).origin;
await browser.defaultBrowserContext().overridePermissions(origin, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write']);
const page = await browser.newPage();
page.setDefaultTimeout(timeout);

async function screenshot(name) {
  mkdirSync(cfg.artifacts, { recursive: true });
  const file = join(cfg.artifacts, `codeserver-${name}.png`);
  await page.screenshot({ path: file }).catch(() => {});
  console.error(`screenshot: ${file}`);
  return file;
}

async function step(name, fn) {
  const started = Date.now();
  try {
    const value = await fn();
    out.steps.push({ name, ms: Date.now() - started });
    return value;
  } catch (error) {
    out.failedStep = name;
    out.error = String(error?.stack ?? error);
    out.screenshot = await screenshot(name.replace(/[^a-z0-9]+/gi, '-'));
    throw error;
  }
}

/** The status-bar item whose text mentions readmany (its text, once it has one). */
async function statusText(pattern) {
  const handle = await page.waitForFunction(
    (source) => {
      const re = new RegExp(source);
      const items = [...document.querySelectorAll('.statusbar-item')];
      const item = items.find((el) => re.test((el.textContent ?? '').trim()));
      return item ? (item.textContent ?? '').trim() : false;
    },
    { timeout },
    pattern.source,
  );
  return handle.jsonValue();
}

/** Open the Command Palette and type `text` into it. */
async function typeInPalette(text) {
  await page.keyboard.press('Escape');
  await page.keyboard.press('F1');
  const input = await page.waitForSelector('.quick-input-widget input', { visible: true });
  await input.evaluate((el) => {
    el.value = '';
  });
  await page.keyboard.type(text, { delay: 5 });
}

/** Run a command from the Command Palette by its title. */
async function palette(title) {
  await typeInPalette(`>${title}`.replace(/^>>/, '>'));
  // The first row is the exact title once the list has filtered.
  await page.waitForFunction(
    (t) => [...document.querySelectorAll('.quick-input-list .monaco-list-row')].some((r) => (r.getAttribute('aria-label') ?? r.textContent ?? '').includes(t)),
    { timeout },
    title,
  );
  await page.keyboard.press('Enter');
}

/** Answer the extension's input box (showInputBox) with `value`. */
async function answerInput(value) {
  // The extension's box has its own placeholder (the palette's list has gone by then).
  const input = await page.waitForSelector('.quick-input-widget input[placeholder*="src/**"]', { visible: true });
  await input.evaluate((el) => el.select());
  await page.keyboard.type(value, { delay: 5 });
  await page.waitForFunction((el, v) => el.value === v, { timeout }, input, value);
  await page.keyboard.press('Enter');
}

/** `pending`, unless an error notification appears first: then its text, as an error. */
async function unlessErrorToast(pending) {
  const toast = page
    .waitForFunction(
      () => {
        const t = [...document.querySelectorAll('.notification-toast')].find((n) => n.querySelector('.codicon-error') && (n.textContent ?? '').includes('readmany'));
        return t ? (t.querySelector('.notification-list-item-message') ?? t).textContent?.trim() ?? '' : false;
      },
      { timeout: 0, polling: 250 },
    )
    .then(async (h) => {
      throw new Error(`error notification: ${await h.jsonValue()}`);
    });
  toast.catch(() => {}); // a toast that never comes, or comes after `pending`
  return Promise.race([pending, toast]);
}

/** The text of the active editor's visible lines (spaces as spaces). */
async function editorText(needle) {
  const handle = await page.waitForFunction(
    (n) => {
      const editors = [...document.querySelectorAll('.editor-instance .view-lines')];
      for (const e of editors) {
        const lines = [...e.querySelectorAll('.view-line')]
          .map((l) => ({ top: parseFloat(l.style.top || '0'), text: l.textContent ?? '' }))
          .sort((a, b) => a.top - b.top)
          .map((l) => l.text.replace(/\u00a0/g, ' '));
        const text = lines.join('\n');
        if (text.includes(n)) return text;
      }
      return false;
    },
    { timeout },
    needle,
  );
  return handle.jsonValue();
}

/** Whether the Command Palette offers "readmany probe: Tool Shown" (shown only while the
 * context key readmany.languageModelTool is true), read once "Report" is listed. */
async function toolShown() {
  await typeInPalette('>readmany probe: ');
  const handle = await page.waitForFunction(
    () => {
      const rows = [...document.querySelectorAll('.quick-input-list .monaco-list-row')].map((r) => r.getAttribute('aria-label') ?? r.textContent ?? '');
      return rows.some((r) => r.includes('readmany probe: Report')) ? rows : false;
    },
    { timeout },
  );
  const rows = await handle.jsonValue();
  await page.keyboard.press('Escape');
  return rows.some((r) => r.includes('readmany probe: Tool Shown'));
}

async function probe() {
  rmSync(cfg.probeOut, { force: true });
  await palette('readmany probe: Report');
  const deadline = Date.now() + timeout;
  while (!existsSync(cfg.probeOut)) {
    if (Date.now() > deadline) throw new Error(`the probe wrote no report to ${cfg.probeOut}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  return JSON.parse(readFileSync(cfg.probeOut, 'utf8'));
}

let exitCode = 0;
try {
  await step('open', async () => {
    await page.goto(cfg.url, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('.monaco-workbench .part.statusbar', { visible: true });
  });
  out.statusBar = await step('status bar', () => statusText(/^readmany \d/));
  out.probeBefore = await step('probe', () => probe());

  out.toolShownBefore = await step('tool contribution hidden', () => toolShown());

  out.mcpServers = await step('MCP: List Servers', async () => {
    await palette('MCP: List Servers');
    const handle = await page.waitForFunction(
      () => {
        const rows = [...document.querySelectorAll('.quick-input-list .monaco-list-row')].map((r) => (r.getAttribute('aria-label') ?? r.textContent ?? '').trim());
        return rows.some((r) => r.includes('readmany')) ? rows : false;
      },
      { timeout },
    );
    const rows = await handle.jsonValue();
    await page.keyboard.press('Escape');
    return rows;
  });

  out.openInEditor = await step('Open in Editor', async () => {
    await palette('Read Many Files: Open in Editor');
    await answerInput('a.txt src/m.py');
    return unlessErrorToast(editorText("print('m')"));
  });

  out.clipboard = await step('Copy to Clipboard', async () => {
    await palette('Read Many Files: Copy to Clipboard');
    await answerInput('a.txt');
    const handle = await unlessErrorToast(page.waitForFunction(
      async () => {
        const t = await navigator.clipboard.readText().catch(() => '');
        return t.includes('--- a.txt ---') ? t : false;
      },
      { timeout, polling: 250 },
    ));
    return handle.jsonValue();
  });

  out.refreshStatus = await step('Refresh Status', async () => {
    await palette('Read Many Files: Refresh Status');
    return statusText(/^readmany \d/);
  });

  out.showOutput = await step('Show Output', async () => {
    await palette('Read Many Files: Show Output');
    const handle = await page.waitForFunction(
      () => {
        const panel = document.querySelector('.part.panel');
        if (!panel || getComputedStyle(panel).display === 'none') return false;
        const text = (panel.textContent ?? '').replace(/\u00a0/g, ' ');
        return text.includes('Read Many Files') && text.includes('readmany') ? text.slice(0, 4000) : false;
      },
      { timeout },
    );
    return handle.jsonValue();
  });

  out.restart = await step('Restart Server', async () => {
    await palette('Read Many Files: Restart Server');
    const before = out.probeBefore?.status?.value?.pid;
    const deadline = Date.now() + timeout;
    for (;;) {
      const after = await probe();
      const pid = after?.status?.value?.pid;
      if (pid !== undefined && pid !== before) return after;
      if (Date.now() > deadline) throw new Error(`the server pid stayed ${before} after Restart Server`);
      await new Promise((r) => setTimeout(r, 500));
    }
  });
  out.statusBarAfterRestart = await step('status bar after restart', () => statusText(/^readmany \d/));

  out.probeBoth = await step('both read tools', async () => {
    await palette('readmany probe: Both Tools');
    const deadline = Date.now() + timeout;
    for (;;) {
      const seen = await probe();
      if (seen.invokeTool?.ok) return seen;
      if (Date.now() > deadline) throw new Error('readmany.mcpServer.alsoLanguageModelTool did not register the Language Model Tool');
      await new Promise((r) => setTimeout(r, 500));
    }
  });
  out.toolShownAfter = await step('tool contribution shown', () => toolShown());
} catch {
  exitCode = 1;
} finally {
  await browser.close().catch(() => {});
}
process.stdout.write(JSON.stringify(out, (_k, v) => (typeof v === 'string' ? v.replace(NBSP, ' ') : v), 2));
process.exit(exitCode);
