-- Headless end-to-end test of readmany.nvim against the real server.
--
--   nvim --headless -u NONE --cmd 'set rtp+=editors/nvim' -c 'luafile editors/nvim/tests/run.lua'
--
-- The server command comes from $READMANY_CMD (a JSON array, e.g.
-- '["readmany","serve","--stdio"]'), else lsp/readmany.lua's default (readmany lsp).
-- The workspace is $READMANY_TEST_ROOT (an empty folder) or a new temp folder.
-- Exits 0 when every check passed, 1 with a message on stderr otherwise.

local uv = vim.uv or vim.loop

-- Put this checkout's plugin first on 'runtimepath' by absolute path (the test `cd`s
-- into the workspace, which a relative `set rtp+=editors/nvim` would not survive).
local script = debug.getinfo(1, 'S').source:gsub('^@', '')
local plugin_dir = vim.fn.fnamemodify(script, ':p:h:h')
vim.opt.runtimepath:prepend(plugin_dir)
local failures = 0
local checks = 0

local function out(msg)
  io.stdout:write(msg .. '\n')
  io.stdout:flush()
end

local function finish()
  pcall(function()
    require('readmany').stop()
    vim.wait(3000, function()
      local clients = vim.lsp.get_clients and vim.lsp.get_clients({ name = 'readmany' })
        or vim.lsp.get_active_clients()
      return #clients == 0
    end, 20)
  end)
  if failures > 0 then
    io.stderr:write(string.format('readmany nvim test: %d of %d checks failed\n', failures, checks))
    vim.cmd('cquit 1')
  else
    out(string.format('readmany nvim test: all %d checks passed', checks))
    vim.cmd('qall!')
  end
end

local function check(cond, what, detail)
  checks = checks + 1
  if cond then
    out('ok   ' .. what)
  else
    failures = failures + 1
    io.stderr:write('FAIL ' .. what .. (detail and (': ' .. detail) or '') .. '\n')
  end
  return cond
end

local function contains(haystack, needle)
  return type(haystack) == 'string' and haystack:find(needle, 1, true) ~= nil
end

-- A whole-test deadline: a hung server must fail the run, not hang it.
local deadline = uv.new_timer()
deadline:start(
  tonumber(os.getenv('READMANY_TEST_TIMEOUT_MS') or '') or 35000,
  0,
  vim.schedule_wrap(function()
    io.stderr:write('FAIL readmany nvim test timed out\n')
    vim.cmd('cquit 2')
  end)
)

local function write(path, text)
  vim.fn.mkdir(vim.fn.fnamemodify(path, ':h'), 'p')
  local f = assert(io.open(path, 'w'))
  f:write(text)
  f:close()
end

local function run()
  local root = os.getenv('READMANY_TEST_ROOT')
  if not root or root == '' then
    root = vim.fn.tempname()
  end
  vim.fn.mkdir(root, 'p')
  root = vim.fn.fnamemodify(root, ':p'):gsub('/$', '')
  local tag = tostring(uv.hrtime())
  write(root .. '/.readmanyignore', 'secret.txt\n')
  write(root .. '/a.txt', 'alpha DISK_' .. tag .. '\n')
  write(root .. '/sub/b.lua', "return 'LUA_" .. tag .. "'\n")
  write(root .. '/secret.txt', 'SECRET_' .. tag .. '\n')
  vim.cmd('cd ' .. vim.fn.fnameescape(root))

  local rm = require('readmany')
  rm.setup({ autostart = true })
  check(vim.fn.exists(':ReadMany') == 2, ':ReadMany is defined')
  check(rm.root() == root, 'root of the current directory', tostring(rm.root()))

  -- 1. A real read through require('readmany').read (started on demand, no buffer).
  local err, res = rm.read_sync({ paths = { 'a.txt', 'sub/b.lua' } }, 30000)
  if not check(err == nil and type(res) == 'table', 'readMany/read answered', vim.inspect(err)) then
    return
  end
  check(contains(res.llmContent, 'DISK_' .. tag), 'llmContent holds a.txt', res.llmContent)
  check(contains(res.llmContent, 'LUA_' .. tag), 'llmContent holds sub/b.lua', res.llmContent)
  check(contains(res.llmContent, '--- a.txt ---'), 'separator framing', res.llmContent)
  check(res.files and res.files[1] and res.files[1].path == 'a.txt' and res.files[1].status == 'ok',
    'files[1] is a.txt, ok', vim.inspect(res.files))
  check(type(res.summary) == 'table' and res.summary.read == 2, 'summary.read == 2', vim.inspect(res.summary))

  -- 2. A glob: .readmanyignore hides secret.txt.
  err, res = rm.read_sync({ paths = { '**/*.txt' } }, 30000)
  check(err == nil and contains(res.llmContent, 'DISK_' .. tag), 'glob read', vim.inspect(err))
  check(err == nil and not contains(res.llmContent, 'SECRET_'), 'glob hides .readmanyignore matches')

  -- 3. Invalid params come back as an error, not a crash.
  err = rm.read_sync({ recursive = true }, 30000)
  check(err ~= nil and contains(err, 'paths'), 'invalid params are an error naming the field', vim.inspect(err))

  -- 4. Overlays: an edited, unsaved buffer wins over disk.
  vim.cmd('edit ' .. vim.fn.fnameescape(root .. '/a.txt'))
  local bufnr = vim.api.nvim_get_current_buf()
  local attached = vim.wait(15000, function()
    local clients = vim.lsp.get_clients and vim.lsp.get_clients({ bufnr = bufnr, name = 'readmany' })
      or vim.lsp.buf_get_clients(bufnr)
    for _, c in pairs(clients) do
      if c.name == 'readmany' and c.initialized then
        return true
      end
    end
    return false
  end, 20)
  check(attached, 'autostart attached the file buffer')
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, { 'alpha UNSAVED_' .. tag })
  err, res = rm.read_sync({ paths = { 'a.txt' } }, 30000)
  check(err == nil and contains(res.llmContent, 'UNSAVED_' .. tag), 'unsaved buffer text wins over disk',
    err or res.llmContent)
  check(err == nil and res.files[1].source == 'overlay', 'files[1].source == overlay',
    err or vim.inspect(res.files[1]))

  -- 5. :ReadMany shows llmContent in a scratch buffer.
  vim.cmd('ReadMany a.txt sub/*.lua format=xml')
  local shown = vim.wait(30000, function()
    local b = vim.fn.bufnr('readmany://answer')
    if b == -1 then
      return false
    end
    local text = table.concat(vim.api.nvim_buf_get_lines(b, 0, -1, false), '\n')
    return contains(text, 'UNSAVED_' .. tag) and contains(text, 'LUA_' .. tag)
  end, 20)
  check(shown, ':ReadMany shows the answer in readmany://answer')
  local ab = vim.fn.bufnr('readmany://answer')
  if ab ~= -1 then
    local text = table.concat(vim.api.nvim_buf_get_lines(ab, 0, -1, false), '\n')
    check(contains(text, '<documents>'), 'format=xml reached the server', text)
    check(vim.bo[ab].buftype == 'nofile', 'answer buffer is nofile', vim.bo[ab].buftype)
    check(vim.bo[ab].filetype == 'xml', 'answer filetype follows the format', vim.bo[ab].filetype)
    check(vim.fn.bufwinid(ab) ~= -1, 'answer buffer is displayed')
  end
  vim.cmd('ReadMany sub/b.lua')
  vim.wait(30000, function()
    return ab ~= -1 and vim.bo[ab].filetype == 'markdown'
      and contains(table.concat(vim.api.nvim_buf_get_lines(ab, 0, -1, false), '\n'), '--- sub/b.lua ---')
  end, 20)
  check(ab ~= -1 and vim.bo[ab].filetype == 'markdown', 'separator answer is markdown', ab ~= -1 and vim.bo[ab].filetype or '')
  check(vim.fn.bufnr('$') <= 3, 'the answer buffer is reused', tostring(vim.fn.bufnr('$')))

  -- 6. readMany/files and readMany/status.
  local done, ferr, fres = false, nil, nil
  rm.files({ patterns = { '**' } }, function(e, r)
    done, ferr, fres = true, e, r
  end)
  vim.wait(30000, function()
    return done
  end, 20)
  local paths = {}
  for _, f in ipairs((fres or {}).files or {}) do
    paths[f.path] = true
  end
  check(ferr == nil and paths['a.txt'] and paths['sub/b.lua'] and not paths['secret.txt'],
    'readMany/files lists the visible files', vim.inspect(ferr or fres))
  done = false
  local serr, sres
  rm.status(function(e, r)
    done, serr, sres = true, e, r
  end)
  vim.wait(30000, function()
    return done
  end, 20)
  check(serr == nil and type(sres) == 'table' and sres.pid ~= nil, 'readMany/status answered',
    vim.inspect(serr or sres))
end

local ok, err = xpcall(run, debug.traceback)
if not ok then
  check(false, 'test raised', err)
end
finish()
