// The part of fengari (a Lua 5.3 VM in JavaScript, which ships no types) that the simulated Redis uses: Lua's C API
// under its C names, with Lua strings as byte arrays.
declare module 'fengari' {
  /** A Lua state (`lua_State *`). */
  export interface LuaState {
    readonly __luaState: never;
  }
  /** A function callable from Lua: takes its arguments from the stack, returns how many results it pushed. */
  export type JsFunction = (L: LuaState) => number;
  type Bytes = Uint8Array;

  export const lua: {
    readonly LUA_OK: number;
    readonly LUA_REGISTRYINDEX: number;
    readonly LUA_RIDX_GLOBALS: number;
    readonly LUA_TNIL: number;
    readonly LUA_TBOOLEAN: number;
    readonly LUA_TLIGHTUSERDATA: number;
    readonly LUA_TNUMBER: number;
    readonly LUA_TSTRING: number;
    readonly LUA_TTABLE: number;
    lua_gettop(L: LuaState): number;
    lua_checkstack(L: LuaState, n: number): boolean;
    lua_settop(L: LuaState, index: number): void;
    lua_pushvalue(L: LuaState, index: number): void;
    lua_pushnil(L: LuaState): void;
    lua_pushnumber(L: LuaState, n: number): void;
    lua_pushinteger(L: LuaState, n: number): void;
    lua_pushboolean(L: LuaState, b: boolean): void;
    lua_pushstring(L: LuaState, s: Bytes | string): void;
    lua_pushjsfunction(L: LuaState, f: JsFunction): void;
    lua_pushlightuserdata(L: LuaState, p: unknown): void;
    lua_touserdata(L: LuaState, index: number): unknown;
    lua_type(L: LuaState, index: number): number;
    lua_toboolean(L: LuaState, index: number): boolean;
    lua_tonumber(L: LuaState, index: number): number;
    lua_tolstring(L: LuaState, index: number): Bytes | null;
    lua_createtable(L: LuaState, narray: number, nrecord: number): void;
    lua_rawget(L: LuaState, index: number): number;
    lua_rawgeti(L: LuaState, index: number, n: number): number;
    lua_rawset(L: LuaState, index: number): void;
    lua_rawseti(L: LuaState, index: number, n: number): void;
    lua_setfield(L: LuaState, index: number, k: Bytes | string): void;
    lua_setglobal(L: LuaState, name: Bytes | string): void;
    lua_getglobal(L: LuaState, name: Bytes | string): number;
    lua_setmetatable(L: LuaState, index: number): void;
    lua_next(L: LuaState, index: number): boolean;
    lua_concat(L: LuaState, n: number): void;
    lua_pcall(L: LuaState, nargs: number, nresults: number, handler: number): number;
    lua_error(L: LuaState): never;
  };
  export const lauxlib: {
    luaL_newstate(): LuaState;
    luaL_loadbuffer(L: LuaState, buffer: Bytes, size: number | null, name: Bytes | string): number;
    luaL_ref(L: LuaState, table: number): number;
    luaL_where(L: LuaState, level: number): void;
    luaL_requiref(L: LuaState, name: Bytes | string, open: JsFunction, global: boolean): void;
  };
  export const lualib: {
    luaopen_base: JsFunction;
    luaopen_table: JsFunction;
    luaopen_string: JsFunction;
    luaopen_math: JsFunction;
    luaopen_debug: JsFunction;
  };
  export function to_luastring(s: string): Bytes;
}

// Two internals, to push a string without the copy lua_pushstring makes: the simulated Redis never changes the bytes
// it hands over, so one array serves every push of the same text.
declare module 'fengari/src/lstring.js' {
  import type { LuaState } from 'fengari';
  export interface TString {
    readonly __tstring: never;
  }
  export function luaS_bless(L: LuaState, bytes: Uint8Array): TString;
}
declare module 'fengari/src/lobject.js' {
  import type { LuaState } from 'fengari';
  import type { TString } from 'fengari/src/lstring.js';
  export function pushsvalue2s(L: LuaState, string: TString): void;
}
