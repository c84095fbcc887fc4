-- readmany.nvim: define the user commands at startup; require('readmany').setup(opts)
-- configures the server and autostart (nothing starts before a command or setup()).
if vim.g.loaded_readmany then
  return
end
vim.g.loaded_readmany = true

if vim.fn.has('nvim-0.7') ~= 1 then
  vim.notify('readmany: Neovim 0.7 or newer is needed', vim.log.levels.WARN)
  return
end

require('readmany').create_commands()
