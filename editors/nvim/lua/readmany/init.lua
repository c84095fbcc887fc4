--- readmany.nvim: read many files at once through the readmany daemon.
---
--- Works on Neovim 0.7+ (vim.lsp.start_client) and uses vim.lsp.config / vim.lsp.enable
--- where present (0.11+); the server defaults live in lsp/readmany.lua.
---
---   require('readmany').setup(opts)
---   require('readmany').read({ paths = { 'src/**/*.lua' } }, function(err, result) end)
---   :ReadMany src/**/*.lua README.md format=xml

local M = {}

local uv = vim.uv or vim.loop
local NAME = 'readmany'
local ANSWER_BUF_NAME = 'readmany://answer'

-- Neovim 0.11 turned client functions into methods (client:request()); 0.7-0.10 have
-- closures (client.request()). vim.lsp.config / vim.lsp.enable arrived in 0.11 too.
local has_methods = vim.fn.has('nvim-0.11') == 1
local has_lsp_config = has_methods and vim.lsp.config ~= nil and vim.lsp.enable ~= nil

local defaults = {
  -- Server command; nil: lsp/readmany.lua's ($READMANY_CMD, else {'readmany', 'lsp'}).
  -- {'readmany', 'serve', '--stdio'} runs a private server per root instead of the
  -- shared daemon.
  cmd = nil,
  cmd_env = nil, -- extra environment for the server, e.g. { READMANY_LOG_LEVEL = 'DEBUG' }
  -- initializationOptions: settings (ignoreFileNames, denyPatterns, maxFileBytes, ...)
  -- and per-connection ReadManyParams defaults (format, perFileMaxLines, ...).
  init_options = nil,
  root_markers = nil, -- nil: lsp/readmany.lua's ({'.git', '.readmanyignore'})
  root_dir = nil, -- function(bufnr) -> path|nil, tried before the markers
  autostart = true, -- attach file buffers inside a root (their unsaved text wins over disk)
  filetypes = nil, -- nil: every file buffer (when autostart)
  params = {}, -- ReadManyParams defaults merged under every read()
  open = 'split', -- how the answer buffer opens: 'split' | 'vsplit' | 'tab' | 'current'
  filetype = nil, -- answer buffer filetype; nil: by format (separator/heredoc: 'markdown')
  start_timeout_ms = 30000, -- how long to wait for the server's initialize answer
}

local state = {
  opts = vim.deepcopy(defaults),
  roots = {}, -- root -> client id started by this module
  last_root = nil,
  did_setup = false,
  commands = false,
}

M.last_result = nil

-- ------------------------------------------------------------------------- helpers

local function notify(msg, level)
  vim.notify('readmany: ' .. msg, level or vim.log.levels.INFO)
end

local function call(client, name, ...)
  if has_methods then
    return client[name](client, ...)
  end
  return client[name](...)
end

local function is_stopped(client)
  return client == nil or call(client, 'is_stopped')
end

local function normalize(path)
  if path == nil or path == '' then
    return nil
  end
  if path:match('^file://') then
    path = vim.uri_to_fname(path)
  end
  path = vim.fn.fnamemodify(path, ':p')
  if #path > 1 then
    path = path:gsub('/+$', '')
  end
  return path
end

local function is_dir(path)
  local st = uv.fs_stat(path)
  return st ~= nil and st.type == 'directory'
end

local function dirname(path)
  return vim.fn.fnamemodify(path, ':h')
end

--- The config table of lsp/readmany.lua (vim.lsp.config's resolved one on 0.11+).
local function base_config()
  if has_lsp_config then
    local ok, cfg = pcall(function()
      return vim.lsp.config[NAME]
    end)
    if ok and type(cfg) == 'table' then
      return vim.deepcopy(cfg)
    end
  end
  local file = vim.api.nvim_get_runtime_file('lsp/' .. NAME .. '.lua', false)[1]
  if file then
    local ok, cfg = pcall(dofile, file)
    if ok and type(cfg) == 'table' then
      return cfg
    end
    notify('could not load ' .. file .. ': ' .. tostring(cfg), vim.log.levels.WARN)
  end
  return { cmd = { 'readmany', 'lsp' }, root_markers = { '.git', '.readmanyignore' } }
end

--- Root markers, flattened (Neovim 0.11.1+ allows nested lists of equal priority).
local function root_markers()
  local markers = state.opts.root_markers or base_config().root_markers or { '.git', '.readmanyignore' }
  local flat = {}
  for _, m in ipairs(markers) do
    if type(m) == 'table' then
      vim.list_extend(flat, m)
    else
      table.insert(flat, m)
    end
  end
  return flat
end

--- The nearest folder at or above `dir` holding one of the root markers, or nil.
local function marker_root(dir)
  local markers = root_markers()
  dir = normalize(dir)
  while dir do
    for _, m in ipairs(markers) do
      if uv.fs_stat(dir .. '/' .. m) then
        return dir
      end
    end
    local parent = dirname(dir)
    if parent == dir then
      return nil
    end
    dir = parent
  end
  return nil
end

local function file_buffer(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) or vim.bo[bufnr].buftype ~= '' then
    return nil
  end
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' or name:match('^%a[%w+.-]*://') then
    return nil
  end
  return name
end

--- The workspace root for `bufnr` (default: current buffer): `opts.root_dir(bufnr)`,
--- then the nearest root marker above the buffer's file; with `strict`, nil when none
--- is found, else the nearest marker above the current directory, else the current
--- directory itself.
function M.root(bufnr, strict)
  bufnr = (bufnr == nil or bufnr == 0) and vim.api.nvim_get_current_buf() or bufnr
  if state.opts.root_dir then
    local r = state.opts.root_dir(bufnr)
    if r then
      return normalize(r)
    end
  end
  if state.answer_buf == bufnr and state.last_root then
    return state.last_root
  end
  local name = file_buffer(bufnr)
  if name then
    local found = marker_root(dirname(name))
    if found or strict then
      return found
    end
  elseif strict then
    return nil
  end
  local cwd = normalize(vim.fn.getcwd())
  return marker_root(cwd) or cwd
end

-- ------------------------------------------------------------------------- clients

local function client_root(client)
  local cfg = client.config or {}
  if cfg.root_dir and type(cfg.root_dir) == 'string' then
    return normalize(cfg.root_dir)
  end
  local folders = client.workspace_folders or cfg.workspace_folders
  if folders and folders[1] then
    return normalize(folders[1].uri or folders[1].name)
  end
  return nil
end

local function readmany_clients()
  if vim.lsp.get_clients then
    return vim.lsp.get_clients({ name = NAME })
  end
  local out = {}
  for _, c in ipairs(vim.lsp.get_active_clients()) do
    if c.name == NAME then
      table.insert(out, c)
    end
  end
  return out
end

--- The running readmany client for `root`, or nil.
local function find_client(root)
  local id = state.roots[root]
  if id then
    local c = vim.lsp.get_client_by_id(id)
    if c and not is_stopped(c) then
      return c
    end
    state.roots[root] = nil
  end
  for _, c in ipairs(readmany_clients()) do
    if not is_stopped(c) and client_root(c) == root then
      return c
    end
  end
  return nil
end

local function client_config(root)
  local cfg = base_config()
  local o = state.opts
  cfg.name = NAME
  cfg.cmd = o.cmd or cfg.cmd
  cfg.cmd_env = o.cmd_env or cfg.cmd_env
  cfg.init_options = o.init_options or cfg.init_options
  if type(cfg.init_options) == 'table' and next(cfg.init_options) == nil then
    cfg.init_options = vim.empty_dict() -- {} would go out as a JSON array
  end
  cfg.root_dir = root
  cfg.workspace_folders = { { uri = vim.uri_from_fname(root), name = root } }
  cfg.root_markers = nil
  cfg.filetypes = nil
  local on_exit = cfg.on_exit
  cfg.on_exit = function(code, signal, client_id)
    if state.roots[root] == client_id then
      state.roots[root] = nil
    end
    if on_exit then
      on_exit(code, signal, client_id)
    end
  end
  return cfg
end

--- Start a readmany client for `root` (no buffer attached); returns its id or nil, err.
local function start_client(root)
  local cfg = client_config(root)
  local cmd = cfg.cmd
  if type(cmd) == 'table' and vim.fn.executable(cmd[1]) ~= 1 then
    return nil,
      string.format(
        '`%s` not found: install readmany-daemon (pip install . in its checkout) or set cmd in setup()',
        cmd[1]
      )
  end
  local id, err
  if has_lsp_config and vim.lsp.start then
    id, err = vim.lsp.start(cfg, { attach = false, silent = true })
  else
    id = vim.lsp.start_client(cfg)
  end
  if not id then
    return nil, 'could not start ' .. vim.inspect(cmd) .. (err and (': ' .. tostring(err)) or '')
  end
  state.roots[root] = id
  return id
end

--- Call `callback(err, client)` once the readmany client for `root` (started when
--- none runs) has answered initialize.
function M.client(root, callback)
  root = normalize(root) or M.root()
  local client = find_client(root)
  if not client then
    local id, err = start_client(root)
    if not id then
      return callback(err)
    end
    client = vim.lsp.get_client_by_id(id)
    if not client then
      return callback('the readmany client exited at once (see :checkhealth lsp / the LSP log)')
    end
  end
  if client.initialized then
    return callback(nil, client)
  end
  local timer = uv.new_timer()
  local started = uv.now()
  local done = false
  timer:start(
    10,
    10,
    vim.schedule_wrap(function()
      if done then
        return
      end
      local err
      if client.initialized then
        err = nil
      elseif is_stopped(client) then
        err = 'the readmany server exited during initialize (see the LSP log: :lua print(vim.lsp.get_log_path()))'
      elseif uv.now() - started > state.opts.start_timeout_ms then
        err = 'the readmany server did not answer initialize in time'
      else
        return
      end
      done = true
      timer:stop()
      timer:close()
      callback(err, err == nil and client or nil)
    end)
  )
end

--- Send `method` with `params` to the readmany client of the current root (or
--- `opts.root`, or `params.root` when it is a folder), starting it when needed;
--- `callback(err, result)`.
function M.request(method, params, callback, opts)
  opts = opts or {}
  callback = callback or function() end
  local root = opts.root
  if not root and type(params) == 'table' and type(params.root) == 'string' and is_dir(params.root) then
    root = params.root
  end
  root = normalize(root) or M.root(opts.bufnr)
  if params == nil or (type(params) == 'table' and next(params) == nil) then
    params = vim.empty_dict()
  end
  M.client(root, function(err, client)
    if err then
      return callback(err)
    end
    state.last_root = root
    local ok = call(client, 'request', method, params, function(rerr, result)
      if rerr then
        local msg = type(rerr) == 'table' and (rerr.message or vim.inspect(rerr)) or tostring(rerr)
        return callback(msg)
      end
      callback(nil, result)
    end, nil)
    if not ok then
      callback('the readmany client is stopped; try again')
    end
  end)
end

--- Run `fn(callback)` and wait for its answer; returns err, result.
local function wait(fn, timeout_ms)
  local done, err, result = false, nil, nil
  fn(function(e, r)
    done, err, result = true, e, r
  end)
  local ok = vim.wait(timeout_ms or 60000, function()
    return done
  end, 10)
  if not ok then
    return 'timed out waiting for readmany', nil
  end
  return err, result
end

local function merged_params(params)
  params = params or {}
  if type(params) == 'string' then
    params = { paths = { params } }
  elseif #params > 0 and params[1] ~= nil then
    params = { paths = params }
  end
  return vim.tbl_extend('force', vim.deepcopy(state.opts.params or {}), params)
end

-- ------------------------------------------------------------------------- public API

--- Send `readMany/read` with a ReadManyParams table (or a list of paths) to the
--- readmany client of the current root; `callback(err, ReadManyResult)`. Without a
--- callback the answer is shown in the answer buffer.
function M.read(params, callback, opts)
  callback = callback or function(err, result)
    if err then
      return notify(err, vim.log.levels.ERROR)
    end
    M.show(result)
  end
  params = merged_params(params)
  state.last_format = params.format
  M.request('readMany/read', params, function(err, result)
    if not err then
      M.last_result = result
    end
    callback(err, result)
  end, opts)
end

--- Like read(), waiting for the answer: returns err, result.
function M.read_sync(params, timeout_ms, opts)
  return wait(function(cb)
    M.read(params, cb, opts)
  end, timeout_ms)
end

--- `readMany/files`: { files = { {path, size, mtimeMs} }, clock }.
function M.files(params, callback, opts)
  M.request('readMany/files', params or {}, callback, opts)
end

--- `readMany/status`: roots, file count, cache, watcher, clock, uptime, pid.
function M.status(callback, opts)
  M.request('readMany/status', {}, callback, opts)
end

--- Stop the readmany clients (all, or the one of `root`).
function M.stop(root)
  root = normalize(root)
  for _, c in ipairs(readmany_clients()) do
    if root == nil or client_root(c) == root then
      call(c, 'stop')
    end
  end
  for r in pairs(state.roots) do
    if root == nil or r == root then
      state.roots[r] = nil
    end
  end
end

local function answer_filetype()
  if state.opts.filetype then
    return state.opts.filetype
  end
  local fmt = state.last_format
  if fmt == 'xml' then
    return 'xml'
  elseif fmt == 'json' then
    return 'json'
  end
  return 'markdown'
end

--- Show `text` (a string or list of lines) in the reused scratch buffer
--- `readmany://answer` (buftype=nofile); returns its number.
function M.show_text(text, filetype)
  local lines = type(text) == 'table' and text or vim.split(text or '', '\n', { plain = true })
  local buf = state.answer_buf
  if not (buf and vim.api.nvim_buf_is_valid(buf)) then
    buf = vim.api.nvim_create_buf(false, true)
    state.answer_buf = buf
    pcall(vim.api.nvim_buf_set_name, buf, ANSWER_BUF_NAME)
    vim.bo[buf].buftype = 'nofile'
    vim.bo[buf].bufhidden = 'hide'
    vim.bo[buf].swapfile = false
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  if filetype and vim.bo[buf].filetype ~= filetype then
    vim.bo[buf].filetype = filetype
  end
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    local open = state.opts.open
    if open == 'vsplit' then
      vim.cmd('vsplit')
    elseif open == 'tab' then
      vim.cmd('tabnew')
    elseif open ~= 'current' then
      vim.cmd('split')
    end
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
  end
  vim.api.nvim_win_set_cursor(win, { 1, 0 })
  return buf
end

--- Show a ReadManyResult: its llmContent in the answer buffer (what the model gets),
--- its returnDisplay summary as a message (what the person gets).
function M.show(result)
  local buf = M.show_text(result.llmContent or '', answer_filetype())
  if type(result.returnDisplay) == 'string' and result.returnDisplay ~= '' then
    local first = vim.split(result.returnDisplay, '\n', { plain = true })[1]
    notify((first:gsub('%*%*', '')))
  end
  return buf
end

-- ------------------------------------------------------------------------- commands

local LIST_KEYS = { include = true, exclude = true, paths = true }
local PARAM_KEYS = {}
for _, k in ipairs({
  'recursive', 'useDefaultExcludes', 'perFileMaxLines', 'per_file_max_lines',
  'perFileMaxChars', 'per_file_max_chars', 'maxTotalFiles', 'max_total_files',
  'maxTotalChars', 'max_total_chars', 'preferFullRead', 'prefer_full_read', 'packing',
  'stopOnError', 'format', 'lineNumbers', 'absolutePaths', 'root', 'sync', 'cursor',
  'include', 'exclude', 'paths', 'respect_git_ignore', 'respect_sii_ignore',
}) do
  PARAM_KEYS[k] = true
end

local function parse_value(v)
  if v == 'true' then
    return true
  elseif v == 'false' then
    return false
  elseif v:match('^%-?%d+$') then
    return tonumber(v)
  end
  return v
end

--- ReadManyParams from command words: `key=value` for a known parameter
--- (`format=xml`, `lineNumbers=true`, `exclude=a,b`), every other word a path or glob.
function M.parse_args(words)
  local params = { paths = {} }
  for _, w in ipairs(words) do
    local k, v = w:match('^([%a_]+)=(.*)$')
    if k and PARAM_KEYS[k] then
      if LIST_KEYS[k] then
        params[k] = vim.list_extend(params[k] or {}, vim.split(v, ',', { plain = true }))
      else
        params[k] = parse_value(v)
      end
    else
      table.insert(params.paths, w)
    end
  end
  if #params.paths == 0 then
    params.paths = nil
  end
  return params
end

local function cmd_read(args)
  M.read(M.parse_args(args.fargs))
end

local function cmd_files(args)
  local params = M.parse_args(args.fargs)
  params.patterns, params.paths = params.paths, nil
  M.files(params, function(err, result)
    if err then
      return notify(err, vim.log.levels.ERROR)
    end
    local lines = {}
    for _, f in ipairs(result.files or {}) do
      table.insert(lines, f.path)
    end
    M.show_text(lines, 'text')
    notify(#lines .. ' file(s)')
  end)
end

local function cmd_status()
  M.status(function(err, result)
    if err then
      return notify(err, vim.log.levels.ERROR)
    end
    local lines = {
      string.format('pid %s, up %s s, %s file(s), %s overlay(s), watcher %s', tostring(result.pid),
        tostring(result.uptime), tostring(result.fileCount), tostring(result.overlays),
        tostring(type(result.watcher) == 'table' and result.watcher.state or '?')),
    }
    for _, r in ipairs(result.roots or {}) do
      table.insert(lines, string.format('  %s: %s file(s), clock %s', tostring(r.root), tostring(r.files or '?'), tostring(r.clock)))
    end
    notify(table.concat(lines, '\n'))
  end)
end

--- Define :ReadMany, :ReadManyFiles, :ReadManyStatus (plugin/readmany.lua does it at
--- startup; setup() does it too, for `nvim -u NONE`).
function M.create_commands()
  if state.commands then
    return
  end
  state.commands = true
  local create = vim.api.nvim_create_user_command
  create('ReadMany', cmd_read, {
    nargs = '+',
    complete = 'file',
    desc = 'readmany: read files/globs into a scratch buffer (key=value sets a ReadManyParams field)',
  })
  create('ReadManyFiles', cmd_files, { nargs = '*', complete = 'file', desc = 'readmany: list indexed files' })
  create('ReadManyStatus', cmd_status, { nargs = 0, desc = 'readmany: daemon status' })
end

-- ------------------------------------------------------------------------- autostart

local function attach(bufnr)
  if not file_buffer(bufnr) then
    return
  end
  local fts = state.opts.filetypes
  if fts and not vim.tbl_contains(fts, vim.bo[bufnr].filetype) then
    return
  end
  local root = M.root(bufnr, true)
  if not root then
    return
  end
  local client = find_client(root)
  local id = client and client.id
  if not id then
    local err
    id, err = start_client(root)
    if not id then
      -- once per session: BufReadPost and FileType both fire for every file opened
      if state.autostart_warned ~= err then
        state.autostart_warned = err
        notify(err, vim.log.levels.WARN)
      end
      return
    end
  end
  vim.lsp.buf_attach_client(bufnr, id)
end

local function enable_autostart()
  if has_lsp_config then
    vim.lsp.enable(NAME)
    return
  end
  local group = vim.api.nvim_create_augroup('readmany', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'FileType' }, {
    group = group,
    callback = function(args)
      attach(args.buf)
    end,
  })
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(b) then
      attach(b)
    end
  end
end

--- Configure readmany (see `defaults` above and editors/nvim/README.md).
function M.setup(opts)
  state.opts = vim.tbl_deep_extend('force', vim.deepcopy(defaults), opts or {})
  if opts and opts.params then
    state.opts.params = vim.deepcopy(opts.params) -- replace, do not merge list fields
  end
  if has_lsp_config then
    local o, override = state.opts, {}
    override.cmd = o.cmd
    override.cmd_env = o.cmd_env
    override.init_options = o.init_options
    if type(o.init_options) == 'table' and next(o.init_options) == nil then
      override.init_options = nil
    end
    override.root_markers = o.root_markers
    override.filetypes = o.filetypes
    if o.root_dir then
      override.root_dir = function(bufnr, on_dir)
        local r = o.root_dir(bufnr)
        if r then
          on_dir(r)
        end
      end
    end
    if next(override) then
      vim.lsp.config(NAME, override)
    end
  end
  M.create_commands()
  if state.opts.autostart then
    enable_autostart()
  end
  state.did_setup = true
end

return M
