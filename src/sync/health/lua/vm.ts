// One health script run, as Argo CD runs it (util/lua: a fresh state per run, `obj` set, the
// script's last return value read back), on Lua 5.4 compiled to WebAssembly (wasmoon's build,
// driven through its C API). Each run has its own state, so nothing a script leaves behind reaches
// the next; its allocations count against a byte budget (past it Lua raises "not enough memory"),
// and a count hook stops it past its budget of VM instructions (work done, the same on a loaded
// machine as on an idle one) or, as a backstop, of wall time, with gopher-lua's words "context
// deadline exceeded" and which budget ran out.
// Runs inside the worker thread of runner.ts, which also stops a run that never yields to the hook.
import type { LuaWasm } from 'wasmoon';
import { PRELUDE } from './prelude.ts';
import type { Raw } from './raw.ts';

export interface LuaRun {
  script: string;
  useOpenLibs: boolean;
  obj: unknown;
  /** VM instructions the run may execute (counted every HOOK_EVERY). */
  instructions: number;
  /** Wall time, a backstop far above what the instruction budget takes. */
  timeoutMs: number;
  memoryBytes: number;
}

/**
 * The Lua type of the script's last return value and, for a table, the value gopher-json encodes
 * it to; or the error the run raised.
 */
export type LuaRunOutcome = { ok: true; luaType: string; value?: unknown } | { ok: false; error: string };
/** `instructions`: about how many VM instructions the run executed (a multiple of HOOK_EVERY). */
export type LuaRunResult = LuaRunOutcome & { printed: string[]; instructions?: number };

/** What a script that used up its instruction budget fails with. */
export function instructionsExceeded(budget: number): string {
  return `context deadline exceeded (the script ran past its budget of ${budget} Lua instructions)`;
}

/** What a script that used up its wall-time budget fails with. */
export function wallTimeExceeded(ms: number): string {
  return `context deadline exceeded (the script ran past its budget of ${ms / 1000} s)`;
}

const T = { nil: 0, boolean: 1, number: 3, string: 4, table: 5 } as const;
const TYPE_NAMES = ['nil', 'boolean', 'userdata', 'number', 'string', 'table', 'function', 'userdata', 'thread'];
const LUA_MULTRET = -1;
const MASK_COUNT = 8;
/**
 * The hook counts instructions, and looks at the clock, every this many VM instructions: often
 * enough that a run's count says something about short scripts too, rarely enough that a run of
 * the whole budget spends little of its time in the hook.
 */
const HOOK_EVERY = 100;
const PRINT_LINES = 100;
const PRINT_CHARS = 2000;
const MARSHAL = 'json: error calling MarshalJSON for type json.jsonValue: ';

class EncodeError extends Error {}

export class LuaVm {
  readonly #m: Raw;
  readonly #enc = new TextEncoder();
  readonly #dec = new TextDecoder();
  readonly #names = new Map<string, number>();
  readonly #scratch: number;
  readonly #len: number;
  readonly #alloc: number;
  readonly #hook: number;
  readonly #print: number;
  readonly #setup: number;
  #obj: unknown;
  #used = 0;
  #limit = 0;
  #deadline = 0;
  #timeoutMs = 0;
  #executed = 0;
  #instructions = 0;
  #printed: string[] = [];

  constructor(lua: LuaWasm) {
    this.#m = lua.module as unknown as Raw;
    const m = this.#m;
    this.#scratch = m._malloc(1 << 16);
    this.#len = m._malloc(4);
    this.#alloc = m.addFunction((_ud, ptr, osize, nsize) => {
      const old = ptr ? (osize as number) : 0;
      if (nsize === 0) {
        if (ptr) m._free(ptr as number);
        this.#used -= old;
        return 0;
      }
      const grow = (nsize as number) - old;
      if (grow > 0 && this.#used + grow > this.#limit) return 0;
      const p = m._realloc(ptr as number, nsize as number);
      if (p) this.#used += grow;
      return p;
    }, 'iiiii');
    this.#hook = m.addFunction((L) => {
      this.#executed += HOOK_EVERY;
      const over =
        this.#executed > this.#instructions
          ? instructionsExceeded(this.#instructions)
          : Date.now() > this.#deadline
            ? wallTimeExceeded(this.#timeoutMs)
            : undefined;
      if (over === undefined) return;
      m._luaL_where(L as number, 0);
      this.#pushString(L as number, over);
      m._lua_concat(L as number, 2);
      m._lua_error(L as number);
    }, 'vii');
    this.#print = m.addFunction((L) => {
      if (this.#printed.length < PRINT_LINES) this.#printed.push(this.#string(L as number, 1).slice(0, PRINT_CHARS));
      return 0;
    }, 'ii');
    // Called through lua_pcall, so that running out of memory while opening the libraries or
    // building `obj` is an error of this run, not a panic of the VM.
    this.#setup = m.addFunction((L) => {
      m._luaL_openlibs(L as number);
      this.#push(L as number, this.#obj);
      m._lua_setglobal(L as number, this.#name('obj'));
      return 0;
    }, 'ii');
  }

  /** Output of print() and io.write() of the current run, for `impersync health`. */
  capture(line: string): void {
    if (this.#printed.length < PRINT_LINES) this.#printed.push(line.slice(0, PRINT_CHARS));
  }

  run(r: LuaRun): LuaRunResult {
    const m = this.#m;
    this.#used = 0;
    this.#limit = r.memoryBytes;
    this.#printed = [];
    this.#executed = 0;
    this.#instructions = r.instructions;
    this.#timeoutMs = r.timeoutMs;
    this.#deadline = Date.now() + r.timeoutMs;
    const L = m._lua_newstate(this.#alloc, 0);
    if (!L) return { ok: false, error: 'not enough memory', printed: [] };
    try {
      return { ...this.#runIn(L, r), printed: this.#printed, instructions: this.#executed };
    } finally {
      m._lua_close(L);
    }
  }

  #runIn(L: number, r: LuaRun): LuaRunOutcome {
    const m = this.#m;
    m._lua_sethook(L, this.#hook, MASK_COUNT, HOOK_EVERY);
    // Everything runs protected, like the script: a budget can stop any step.
    this.#obj = r.obj;
    m._lua_pushcclosure(L, this.#setup, 0);
    const setup = m._lua_pcallk(L, 0, 0, 0, 0, 0);
    this.#obj = undefined;
    if (setup !== 0) return { ok: false, error: this.#string(L, -1) };
    const prelude = this.#load(L, PRELUDE, '=prelude');
    if (prelude !== null) return { ok: false, error: prelude };
    m._lua_pushboolean(L, r.useOpenLibs ? 1 : 0);
    m._lua_pushcclosure(L, this.#print, 0);
    if (m._lua_pcallk(L, 2, 0, 0, 0, 0) !== 0) return { ok: false, error: this.#string(L, -1) };
    const base = m._lua_gettop(L);
    const loaded = this.#load(L, r.script, '=<string>');
    if (loaded !== null) return { ok: false, error: loaded };
    if (m._lua_pcallk(L, 0, LUA_MULTRET, 0, 0, 0) !== 0) return { ok: false, error: this.#string(L, -1) };
    const top = m._lua_gettop(L);
    const luaType = top === base ? 'nil' : (TYPE_NAMES[m._lua_type(L, top)] ?? 'userdata');
    if (luaType !== 'table') return { ok: true, luaType };
    try {
      return { ok: true, luaType, value: this.#encode(L, top, 0, new Set()) };
    } catch (err) {
      if (err instanceof EncodeError) return { ok: false, error: err.message };
      throw err;
    }
  }

  /** Loads a chunk (text only); null when it compiled, else the syntax error. */
  #load(L: number, code: string, name: string): string | null {
    const m = this.#m;
    const bytes = this.#enc.encode(code);
    const p = m._malloc(bytes.length || 1);
    try {
      m.HEAPU8.set(bytes, p);
      if (m._luaL_loadbufferx(L, p, bytes.length, this.#name(name), this.#name('t')) === 0) return null;
      return this.#string(L, -1);
    } finally {
      m._free(p);
    }
  }

  #name(s: string): number {
    let p = this.#names.get(s);
    if (p === undefined) {
      const bytes = this.#enc.encode(`${s}\0`);
      p = this.#m._malloc(bytes.length);
      this.#m.HEAPU8.set(bytes, p);
      this.#names.set(s, p);
    }
    return p;
  }

  #pushString(L: number, s: string): void {
    const m = this.#m;
    if (s.length * 3 <= 1 << 16) {
      const { written } = this.#enc.encodeInto(s, m.HEAPU8.subarray(this.#scratch, this.#scratch + (1 << 16)));
      m._lua_pushlstring(L, this.#scratch, written);
      return;
    }
    const bytes = this.#enc.encode(s);
    const p = m._malloc(bytes.length);
    m.HEAPU8.set(bytes, p);
    m._lua_pushlstring(L, p, bytes.length);
    m._free(p);
  }

  /** Argo CD's decodeValue: maps and lists become tables, null becomes nil. */
  #push(L: number, v: unknown): void {
    const m = this.#m;
    if (v === null || v === undefined) m._lua_pushnil(L);
    else if (typeof v === 'boolean') m._lua_pushboolean(L, v ? 1 : 0);
    else if (typeof v === 'number') {
      // Whole numbers as integers, so that tostring(obj.spec.replicas) is "3" as in Lua 5.1.
      if (Number.isSafeInteger(v)) m._lua_pushinteger(L, BigInt(v));
      else m._lua_pushnumber(L, v);
    } else if (typeof v === 'string') this.#pushString(L, v);
    else if (Array.isArray(v)) {
      m._lua_createtable(L, v.length, 0);
      v.forEach((item, i) => {
        this.#push(L, item);
        m._lua_rawseti(L, -2, BigInt(i + 1));
      });
    } else if (typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>);
      m._lua_createtable(L, 0, entries.length);
      for (const [k, item] of entries) {
        this.#pushString(L, k);
        this.#push(L, item);
        m._lua_rawset(L, -3);
      }
    } else m._lua_pushnil(L);
  }

  #string(L: number, i: number): string {
    const m = this.#m;
    const p = m._luaL_tolstring(L, i, this.#len);
    const s = this.#dec.decode(m.HEAPU8.subarray(p, p + (m.HEAPU32[this.#len >> 2] ?? 0)));
    m._lua_settop(L, -2);
    return s;
  }

  /** gopher-json's Encode, with its errors as encoding/json reports them (one prefix per level). */
  #encode(L: number, i: number, depth: number, visited: Set<number>): unknown {
    const m = this.#m;
    const fail = (raw: string): never => {
      throw new EncodeError(`${MARSHAL.repeat(depth + 1)}${raw}`);
    };
    switch (m._lua_type(L, i)) {
      case T.nil:
        return null;
      case T.boolean:
        return m._lua_toboolean(L, i) !== 0;
      case T.number: {
        const n = m._lua_tonumberx(L, i, 0);
        if (!Number.isFinite(n)) fail(`json: unsupported value: ${Number.isNaN(n) ? 'NaN' : n > 0 ? '+Inf' : '-Inf'}`);
        return n;
      }
      case T.string: {
        const p = m._lua_tolstring(L, i, this.#len);
        return this.#dec.decode(m.HEAPU8.subarray(p, p + (m.HEAPU32[this.#len >> 2] ?? 0)));
      }
      case T.table:
        break;
      default:
        fail(`cannot encode ${TYPE_NAMES[m._lua_type(L, i)] ?? 'userdata'} to JSON`);
    }
    const ptr = m._lua_topointer(L, i);
    if (visited.has(ptr)) fail('cannot encode recursively nested tables to JSON');
    visited.add(ptr);
    const list: unknown[] = [];
    const map: Record<string, unknown> = {};
    let shape: 'empty' | 'array' | 'object' = 'empty';
    m._lua_pushnil(L);
    while (m._lua_next(L, i) !== 0) {
      const top = m._lua_gettop(L);
      const keyType = m._lua_type(L, top - 1);
      if (shape === 'empty') shape = keyType === T.number ? 'array' : keyType === T.string ? 'object' : 'empty';
      if (shape === 'array') {
        if (keyType !== T.number) fail('cannot encode mixed or invalid key types');
        if (m._lua_tonumberx(L, top - 1, 0) !== list.length + 1) fail('cannot encode sparse array');
        list.push(this.#encode(L, top, depth + 1, visited));
      } else if (shape === 'object' && keyType === T.string) {
        const p = m._lua_tolstring(L, top - 1, this.#len);
        const key = this.#dec.decode(m.HEAPU8.subarray(p, p + (m.HEAPU32[this.#len >> 2] ?? 0)));
        map[key] = this.#encode(L, top, depth + 1, visited);
      } else fail('cannot encode mixed or invalid key types');
      m._lua_settop(L, -2);
    }
    return shape === 'object' ? map : list;
  }
}
