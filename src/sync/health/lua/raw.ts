// The part of Lua's C API that vm.ts drives, as wasmoon's WebAssembly module exports it (wasmoon's
// own typings describe its wrappers, not these exports). lua_Integer arguments are 64-bit: BigInt.
/** The C API functions used here, as the WebAssembly module exports them. */
export interface Raw {
  _malloc(n: number): number;
  _free(p: number): void;
  _realloc(p: number, n: number): number;
  HEAPU8: Uint8Array;
  HEAPU32: Uint32Array;
  addFunction(fn: (...args: number[]) => number | void, sig: string): number;
  _lua_newstate(alloc: number, ud: number): number;
  _lua_close(L: number): void;
  _lua_settop(L: number, i: number): void;
  _lua_gettop(L: number): number;
  _lua_pushnil(L: number): void;
  _lua_pushboolean(L: number, b: number): void;
  _lua_pushinteger(L: number, n: bigint): void;
  _lua_pushnumber(L: number, n: number): void;
  _lua_pushlstring(L: number, p: number, n: number): number;
  _lua_pushcclosure(L: number, fn: number, n: number): void;
  _lua_createtable(L: number, narr: number, nrec: number): void;
  _lua_rawset(L: number, i: number): void;
  _lua_rawseti(L: number, i: number, n: bigint): void;
  _lua_setglobal(L: number, name: number): void;
  _lua_type(L: number, i: number): number;
  _lua_next(L: number, i: number): number;
  _lua_toboolean(L: number, i: number): number;
  _lua_tonumberx(L: number, i: number, isnum: number): number;
  _lua_tolstring(L: number, i: number, len: number): number;
  _luaL_tolstring(L: number, i: number, len: number): number;
  _lua_topointer(L: number, i: number): number;
  _lua_sethook(L: number, fn: number, mask: number, count: number): void;
  _luaL_where(L: number, level: number): void;
  _lua_concat(L: number, n: number): void;
  _lua_error(L: number): number;
  _luaL_loadbufferx(L: number, p: number, n: number, name: number, mode: number): number;
  _lua_pcallk(L: number, nargs: number, nres: number, errfunc: number, ctx: number, k: number): number;
  _luaL_openlibs(L: number): void;
}
