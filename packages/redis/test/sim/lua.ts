// Lua's C API for the simulated Redis, from wasmoon's build of Lua 5.4 in WebAssembly: its exported C functions,
// called directly (wasmoon's conversions of JavaScript values would cost more than the scripts themselves), and the
// copies of bytes into and out of the WebAssembly memory that they need.
import { LuaFactory } from 'wasmoon';

/** A Lua state (`lua_State *`): an address in the WebAssembly memory. */
export type LuaState = number;
/** A function callable from Lua: takes its arguments from the stack, returns how many results it pushed. */
export type CFunction = (L: LuaState) => number;

/** Lua's C functions as the WebAssembly module exports them: pointers are addresses, `lua_Integer` is a bigint. */
interface Exports {
  readonly HEAPU8: Uint8Array;
  readonly HEAPU32: Uint32Array;
  addFunction(run: CFunction, signature: 'ii'): number;
  stringToNewUTF8(text: string): number;
  _malloc(size: number): number;
  _free(pointer: number): void;
  _luaL_newstate(): LuaState;
  _luaL_loadbufferx(L: LuaState, buffer: number, size: number, name: number, mode: number): number;
  _luaL_ref(L: LuaState, table: number): number;
  _luaL_where(L: LuaState, level: number): void;
  _luaL_requiref(L: LuaState, name: number, open: number, global: number): void;
  _lua_gettop(L: LuaState): number;
  _lua_checkstack(L: LuaState, n: number): number;
  _lua_settop(L: LuaState, index: number): void;
  _lua_pushvalue(L: LuaState, index: number): void;
  _lua_pushnil(L: LuaState): void;
  _lua_pushnumber(L: LuaState, n: number): void;
  _lua_pushinteger(L: LuaState, n: bigint): void;
  _lua_pushboolean(L: LuaState, b: number): void;
  _lua_pushlstring(L: LuaState, bytes: number, length: number): number;
  _lua_pushcclosure(L: LuaState, f: number, upvalues: number): void;
  _lua_pushlightuserdata(L: LuaState, p: number): void;
  _lua_touserdata(L: LuaState, index: number): number;
  _lua_type(L: LuaState, index: number): number;
  _lua_toboolean(L: LuaState, index: number): number;
  _lua_tonumberx(L: LuaState, index: number, isNumber: number): number;
  _lua_tolstring(L: LuaState, index: number, length: number): number;
  _lua_createtable(L: LuaState, narray: number, nrecord: number): void;
  _lua_rawget(L: LuaState, index: number): number;
  _lua_rawgeti(L: LuaState, index: number, n: bigint): number;
  _lua_rawset(L: LuaState, index: number): void;
  _lua_rawseti(L: LuaState, index: number, n: bigint): void;
  _lua_setfield(L: LuaState, index: number, k: number): void;
  _lua_setglobal(L: LuaState, name: number): void;
  _lua_setmetatable(L: LuaState, index: number): number;
  _lua_next(L: LuaState, index: number): number;
  _lua_concat(L: LuaState, n: number): void;
  _lua_pcallk(L: LuaState, nargs: number, nresults: number, handler: number, context: number, k: number): number;
  _lua_error(L: LuaState): number;
  _luaopen_base(L: LuaState): number;
  _luaopen_table(L: LuaState): number;
  _luaopen_string(L: LuaState): number;
  _luaopen_math(L: LuaState): number;
  _luaopen_debug(L: LuaState): number;
}

/**
 * The module, with each C function as WebAssembly exports it: wasmoon's module wraps each in a function that checks
 * that the runtime started (and forwards its `arguments`), a cost the scripts' hundreds of calls per run would pay
 * each time. The exports are taken from WebAssembly.instantiate while the module starts.
 */
async function start(): Promise<Exports> {
  const instantiate = WebAssembly.instantiate;
  let exports: WebAssembly.Exports | undefined;
  const capture = async (...args: Parameters<typeof instantiate>): Promise<unknown> => {
    const result: unknown = await Reflect.apply(instantiate, WebAssembly, args);
    if (typeof result === 'object' && result !== null && 'instance' in result) {
      exports ??= (result.instance as WebAssembly.Instance).exports;
    }
    return result;
  };
  WebAssembly.instantiate = capture as typeof WebAssembly.instantiate;
  let module: object;
  try {
    module = (await new LuaFactory().getLuaModule()).module;
  } finally {
    WebAssembly.instantiate = instantiate;
  }
  const api: Record<string, unknown> = Object.create(module) as Record<string, unknown>;
  for (const [name, value] of Object.entries(exports ?? {})) {
    if (typeof value === 'function' && `_${name}` in module) api[`_${name}`] = value;
  }
  return api as unknown as Exports;
}

export const api = await start();

export const LUA_OK = 0;
export const LUA_REGISTRYINDEX = -1_001_000;
export const LUA_RIDX_GLOBALS = 2n;
export const LUA_TNIL = 0;
export const LUA_TBOOLEAN = 1;
export const LUA_TLIGHTUSERDATA = 2;
export const LUA_TNUMBER = 3;
export const LUA_TSTRING = 4;
export const LUA_TTABLE = 5;

/** A function Lua can call (a C function pointer); the module keeps it for the process. */
export function cFunction(run: CFunction): number {
  return api.addFunction(run, 'ii');
}

/** A NUL-terminated copy of `text` for the C functions that take one (kept for the process: names only). */
export function cString(text: string): number {
  return api.stringToNewUTF8(text);
}

/** Raises the error on the top of the stack (a longjmp: it never returns). */
export function raise(L: LuaState): never {
  api._lua_error(L);
  throw new Error('lua_error returned');
}

// One buffer in the WebAssembly memory through which every string is pushed (Lua copies it at once).
let scratch = 0;
let scratchSize = 0;
function room(size: number): number {
  if (size > scratchSize) {
    if (scratch !== 0) api._free(scratch);
    scratchSize = Math.max(size, 2 * scratchSize, 4096);
    scratch = api._malloc(scratchSize);
  }
  return scratch;
}
const length = api._malloc(4);
let view = Buffer.from(api.HEAPU8.buffer);
/**
 * The WebAssembly memory as a Buffer (its native UTF-8 codec); a new one once the memory has grown (which detaches
 * the old one: it is then empty).
 */
export function memory(): Buffer {
  if (view.length === 0) view = Buffer.from(api.HEAPU8.buffer);
  return view;
}

/** Pushes `text` as a Lua string of its UTF-8 bytes. */
export function pushText(L: LuaState, text: string): void {
  const size = text.length;
  const at = room(size * 3);
  // The memory is taken after malloc, which may have grown (and so replaced) it.
  const heap = memory();
  let written = size;
  if (size <= 16) {
    // Short ASCII (keys, ids, fields) is written byte by byte, faster than the codec's call.
    for (let index = 0; index < size; index += 1) {
      const code = text.charCodeAt(index);
      if (code >= 0x80) {
        written = heap.write(text, at, size * 3, 'utf8');
        break;
      }
      heap[at + index] = code;
    }
  } else {
    written = heap.write(text, at, size * 3, 'utf8');
  }
  api._lua_pushlstring(L, at, written);
}

/** Pushes a Lua string of `bytes`. */
export function pushBytes(L: LuaState, bytes: Uint8Array): void {
  const at = room(bytes.length);
  api.HEAPU8.set(bytes, at);
  api._lua_pushlstring(L, at, bytes.length);
}

/** The address of the string (or number, converted in place) at `index` and its length; [0, 0] for any other value. */
export function stringAt(L: LuaState, index: number): readonly [pointer: number, size: number] {
  const pointer = api._lua_tolstring(L, index, length);
  return pointer === 0 ? [0, 0] : [pointer, api.HEAPU32[length >> 2] ?? 0];
}

/** A copy of the bytes of the string (or number, converted in place) at `index`; null for any other value. */
export function bytesAt(L: LuaState, index: number): Buffer | null {
  const pointer = api._lua_tolstring(L, index, length);
  if (pointer === 0) return null;
  const size = api.HEAPU32[length >> 2] ?? 0;
  const bytes = Buffer.allocUnsafe(size);
  memory().copy(bytes, 0, pointer, pointer + size);
  return bytes;
}

/** The string (or number, converted in place) at `index` read as UTF-8; null for any other value. */
export function textAt(L: LuaState, index: number): string | null {
  const pointer = api._lua_tolstring(L, index, length);
  if (pointer === 0) return null;
  const size = api.HEAPU32[length >> 2] ?? 0;
  const heap = memory();
  // Short ASCII (keys, ids, statuses) is read byte by byte, faster than the codec's call.
  if (size <= 8) {
    let text = '';
    for (let at = pointer; at < pointer + size; at += 1) {
      const byte = heap[at] ?? 0;
      if (byte >= 0x80) return heap.toString('utf8', pointer, pointer + size);
      text += String.fromCharCode(byte);
    }
    return text;
  }
  return heap.toString('utf8', pointer, pointer + size);
}

/** Compiles `source` into a function on the top of the stack; returns Lua's status (an error message instead). */
export function load(L: LuaState, source: string, name: number): number {
  const bytes = Buffer.from(source, 'utf8');
  const at = room(bytes.length);
  api.HEAPU8.set(bytes, at);
  return api._luaL_loadbufferx(L, at, bytes.length, name, 0);
}

const SMALL = Array.from({ length: 1024 }, (_, n) => BigInt(n));
/** `n` as a `lua_Integer` (a bigint across the boundary): the small ones, table indexes mostly, made once. */
export function integer(n: number): bigint {
  return n >= 0 && n < 1024 ? (SMALL[n] ?? BigInt(n)) : BigInt(n);
}
