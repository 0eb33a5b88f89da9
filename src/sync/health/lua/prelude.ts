// The Lua code run before every health script: it shapes a Lua 5.4 state into the environment Argo
// CD's scripts are written for (gopher-lua, Lua 5.1) and withholds what Argo CD withholds.
//
// Without useOpenLibs, Argo CD opens only the base and table libraries, `require` (of what is
// preloaded) and an os module with time() and date(); string, math, io, debug and coroutine are
// absent, and so are string methods. With useOpenLibs every library is there, except what would
// reach the host or escape the budgets: the VM has no view of the host's files (its file system is
// an empty virtual one), and os.execute/exit/remove/rename/getenv, io.open/lines/popen/read and
// debug.sethook fail; bytecode cannot be loaded either way.
//
// Lua 5.1 names that 5.4 dropped are restored: unpack, loadstring, table.getn, table.maxn,
// math.pow, math.mod, math.log10, math.atan2, string.gfind; tostring() and print() write an
// integral float as 5.1 does ("2", not "2.0").
export const PRELUDE = String.raw`
local open, emit = ...
local G = _G
local rawtostring, rawload, select, type, pairs, ipairs, error = tostring, load, select, type, pairs, ipairs, error
local sub, concat, mathtype = string.sub, table.concat, math.type

local function tostring51(v)
  local s = rawtostring(v)
  if mathtype(v) == 'float' and sub(s, -2) == '.0' then return sub(s, 1, -3) end
  return s
end
G.tostring = tostring51
G.print = function(...)
  local parts = {}
  for i = 1, select('#', ...) do parts[i] = tostring51((select(i, ...))) end
  emit(concat(parts, '\t'))
end

G.unpack = table.unpack
table.getn = function(t) return #t end
table.maxn = function(t)
  local n = 0
  for k in pairs(t) do if type(k) == 'number' and k > n then n = k end end
  return n
end
-- Text only: loading bytecode could corrupt the VM, which is no sandbox any more.
G.loadstring = function(s, name) return rawload(s, name, 't') end
G.load = function(...)
  local chunk, name, _, env = ...
  if select('#', ...) >= 4 then return rawload(chunk, name, 't', env) end
  return rawload(chunk, name, 't')
end
G.actionParams = {}

package.path, package.cpath, package.loadlib, package.searchpath = '', '', nil, nil
package.searchers = { package.searchers[1] }

local function unavailable(name)
  return function() error(name .. " is not available in impersync's Lua sandbox", 2) end
end

if not open then
  local safe_os = { time = os.time, date = os.date }
  G.os, package.loaded.os = safe_os, safe_os
  for _, name in ipairs({ 'string', 'math', 'io', 'debug', 'coroutine', 'utf8' }) do
    G[name], package.loaded[name] = nil, nil
  end
  getmetatable('').__index = nil
  G.dofile, G.loadfile = nil, nil
else
  math.pow = function(x, y) return x ^ y end
  math.mod, math.log10 = math.fmod, function(x) return math.log(x, 10) end
  math.atan2 = function(y, x) return math.atan(y, x) end
  string.gfind = string.gmatch
  for _, name in ipairs({ 'execute', 'exit', 'remove', 'rename', 'tmpname', 'setlocale' }) do
    os[name] = unavailable('os.' .. name)
  end
  os.getenv = function() return nil end
  for _, name in ipairs({ 'open', 'lines', 'popen', 'tmpfile', 'input', 'output', 'read', 'close' }) do
    io[name] = unavailable('io.' .. name)
  end
  io.write = function(...)
    local parts = {}
    for i = 1, select('#', ...) do parts[i] = tostring51((select(i, ...))) end
    emit(concat(parts))
    return io
  end
  io.stdin = nil
  debug.sethook = unavailable('debug.sethook')
end
`;
