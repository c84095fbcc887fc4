-- readmany: a warm JSON-RPC daemon that answers batch "read many files" requests.
--
-- A plain config table, as nvim-lspconfig's lsp/*.lua files are: on Neovim 0.11+
-- `vim.lsp.config('readmany', {...})` merges your overrides over it and
-- `vim.lsp.enable('readmany')` attaches file buffers; the readmany plugin
-- (`require('readmany').setup()`) reads the same table on Neovim 0.7-0.10.
--
-- Server command: $READMANY_CMD when set (a JSON array such as
-- '["readmany","serve","--stdio"]', or words split on blanks), else `readmany lsp`
-- (the stdio bridge to the shared per-user daemon, started when none runs).

local function env_cmd()
  local raw = os.getenv('READMANY_CMD')
  if raw == nil or vim.trim(raw) == '' then
    return nil
  end
  raw = vim.trim(raw)
  if raw:sub(1, 1) == '[' then
    local ok, list = pcall(vim.fn.json_decode, raw)
    if ok and type(list) == 'table' and #list > 0 then
      return list
    end
  end
  return vim.split(raw, '%s+')
end

local root_markers = { '.git', '.readmanyignore' }

return {
  cmd = env_cmd() or { 'readmany', 'lsp' },
  -- No `filetypes`: every file buffer is an overlay (its unsaved text wins over disk
  -- for every reader of the same root, agents included).
  root_markers = root_markers,
  -- A buffer gets a client only inside a folder with a root marker: readmany
  -- indexes the whole root, and a stray file in $HOME must not index $HOME.
  -- `:ReadMany` in a folder without markers uses the current directory instead.
  root_dir = function(bufnr, on_dir)
    local root = vim.fs and vim.fs.root and vim.fs.root(bufnr, root_markers)
    if root then
      on_dir(root)
    end
  end,
  -- Settings (PROTOCOL §7: ignoreFileNames, denyPatterns, maxFileBytes, ...) and
  -- per-connection ReadManyParams defaults (format, perFileMaxLines, ...).
  init_options = vim.empty_dict(),
}
