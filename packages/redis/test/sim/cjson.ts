// Redis's `cjson` library (lua-cjson 2.1 with Redis's defaults) for the simulated Redis: the same values, the same
// leniency (hex, Infinity and NaN numbers, leading zeros, raw control bytes in strings) and the same error texts,
// since a script tells a damaged record by whether `pcall(cjson.decode, text)` fails.
import {
  LUA_TBOOLEAN,
  LUA_TLIGHTUSERDATA,
  LUA_TNIL,
  LUA_TNUMBER,
  LUA_TSTRING,
  LUA_TTABLE,
  api,
  bytesAt,
  integer,
  stringAt,
  pushBytes,
  pushText,
  raise,
  type LuaState,
} from './lua.js';

/** `cjson.null`: the light userdata that stands for JSON's null (lua-cjson's is NULL too). */
export const JSON_NULL = 0;

const MAX_DEPTH = 1000;
const TOKEN_NAMES = ['T_OBJ_BEGIN', 'T_OBJ_END', 'T_ARR_BEGIN', 'T_ARR_END', 'T_STRING', 'T_NUMBER'] as const;
const enum T {
  ObjBegin,
  ObjEnd,
  ArrBegin,
  ArrEnd,
  String,
  Number,
  Boolean,
  Null,
  Colon,
  Comma,
  End,
  Error,
}
const NAMES: readonly string[] = [...TOKEN_NAMES, 'T_BOOLEAN', 'T_NULL', 'T_COLON', 'T_COMMA', 'T_END'];
const ESCAPES: Readonly<Record<number, number>> = { 34: 34, 92: 92, 47: 47, 98: 8, 102: 12, 110: 10, 114: 13, 116: 9 };
/** Each byte's punctuation token (a table: the tokenizer reads every byte of every record). */
const PUNCTUATION = Array.from({ length: 256 }, (): T | undefined => undefined);
for (const [byte, type] of [
  [123, T.ObjBegin],
  [125, T.ObjEnd],
  [91, T.ArrBegin],
  [93, T.ArrEnd],
  [58, T.Colon],
  [44, T.Comma],
] as const) {
  PUNCTUATION[byte] = type;
}
/** What glibc's strtod reads (lua-cjson hands every number to it). */
const STRTOD =
  /^[+-]?(?:0[xX](?:[0-9a-fA-F]+(?:\.[0-9a-fA-F]*)?|\.[0-9a-fA-F]+)(?:[pP][+-]?\d+)?|(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan(?:\([0-9A-Za-z_]*\))?)/i;

/** The bytes strtod could read as part of a number (the regular expression above then says how many it does). */
const NUMBER_BYTES = Uint8Array.from({ length: 256 }, (_, byte) =>
  /[0-9a-zA-Z.+\-_()]/.test(String.fromCharCode(byte)) ? 1 : 0,
);
/** A plain JSON number, which strtod reads whole as Number() does. */
const DECIMAL = /^-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

interface Token {
  type: T;
  /** Where it starts (0-based), or where its error is. */
  index: number;
  /** A string's bytes, a number, a boolean, or an error's text. */
  value: Uint8Array | number | boolean | string | null;
  /** A string without escapes: its bytes are the text's from `index` + 1, this many (`value` is then null). */
  size?: number;
}

class Parser {
  index = 0;
  depth = 0;
  constructor(
    readonly L: LuaState,
    /** A copy of the text, to read. */
    readonly data: Buffer,
    /** The text's own address in Lua's memory (it stays on the stack meanwhile), to push its strings from. */
    readonly source: number,
  ) {}

  byte(at: number): number {
    // lua-cjson reads a C string: a NUL byte ends the text.
    return at < this.data.length ? (this.data[at] ?? 0) : 0;
  }

  fail(message: string): never {
    api._luaL_where(this.L, 1);
    pushText(this.L, message);
    api._lua_concat(this.L, 2);
    return raise(this.L);
  }

  expected(what: string, token: Token): never {
    const found = token.type === T.Error ? String(token.value) : (NAMES[token.type] ?? 'T_UNKNOWN');
    return this.fail(`Expected ${what} but found ${found} at character ${token.index + 1}`);
  }

  next(): Token {
    const { data } = this;
    let start = this.index;
    let ch = start < data.length ? (data[start] ?? 0) : 0;
    while (ch === 32 || ch === 9 || ch === 10 || ch === 13) {
      start += 1;
      ch = start < data.length ? (data[start] ?? 0) : 0;
    }
    this.index = start;
    if (ch === 0) return { type: T.End, index: start, value: null };
    const punctuation = PUNCTUATION[ch];
    if (punctuation !== undefined) {
      this.index += 1;
      return { type: punctuation, index: start, value: null };
    }
    if (ch === 34) return this.string();
    if (ch === 45 || (ch >= 48 && ch <= 57)) return this.number();
    for (const [word, type, value] of [
      ['true', T.Boolean, true],
      ['false', T.Boolean, false],
      ['null', T.Null, null],
    ] as const) {
      if (this.startsWith(word)) {
        this.index += word.length;
        return { type, index: start, value };
      }
    }
    if (/^(?:inf|nan)/i.test(this.ascii(start, 3))) return this.number();
    return { type: T.Error, index: start, value: 'invalid token' };
  }

  startsWith(word: string): boolean {
    for (let i = 0; i < word.length; i += 1) if (this.byte(this.index + i) !== word.charCodeAt(i)) return false;
    return true;
  }

  ascii(from: number, length: number): string {
    let text = '';
    for (let at = from; at < from + length; at += 1) {
      const byte = this.byte(at);
      if (byte === 0) break;
      text += String.fromCharCode(byte);
    }
    return text;
  }

  number(): Token {
    const { data } = this;
    const start = this.index;
    let end = start;
    while (end < data.length && NUMBER_BYTES[data[end] ?? 0] === 1) end += 1;
    const candidate = data.toString('latin1', start, end);
    if (DECIMAL.test(candidate)) {
      // A plain JSON number (a generation): Number() reads it as strtod does.
      this.index += candidate.length;
      return { type: T.Number, index: start, value: Number(candidate) };
    }
    const text = STRTOD.exec(candidate)?.[0];
    if (text === undefined) return { type: T.Error, index: start, value: 'invalid number' };
    this.index += text.length;
    return { type: T.Number, index: start, value: strtod(text) };
  }

  string(): Token {
    const { data } = this;
    const open = this.index;
    let at = open + 1;
    // Most strings have no escape: their bytes are the value, shared, not copied.
    while (at < data.length && data[at] !== 34 && data[at] !== 92 && data[at] !== 0) at += 1;
    if (at < data.length && data[at] === 34) {
      this.index = at + 1;
      return { type: T.String, index: open, value: null, size: at - open - 1 };
    }
    const out: number[] = [...data.subarray(open + 1, at)];
    this.index = at;
    for (let ch = this.byte(this.index); ch !== 34; ch = this.byte(this.index)) {
      if (ch === 0) return { type: T.Error, index: this.index, value: 'unexpected end of string' };
      if (ch === 92) {
        const escape = this.byte(this.index + 1);
        if (escape === 117) {
          if (this.unicode(out)) continue;
          return { type: T.Error, index: this.index, value: 'invalid unicode escape code' };
        }
        const translated = ESCAPES[escape];
        if (translated === undefined) return { type: T.Error, index: this.index, value: 'invalid escape code' };
        out.push(translated);
        this.index += 2;
        continue;
      }
      out.push(ch);
      this.index += 1;
    }
    this.index += 1;
    return { type: T.String, index: open, value: Uint8Array.from(out) };
  }

  hex4(at: number): number {
    let value = 0;
    for (let i = 0; i < 4; i += 1) {
      const digit = parseInt(String.fromCharCode(this.byte(at + i)), 16);
      if (Number.isNaN(digit)) return -1;
      value = value * 16 + digit;
    }
    return value;
  }

  /** A `\uXXXX` escape (a surrogate pair takes two), appended as UTF-8; false when invalid. */
  unicode(out: number[]): boolean {
    let point = this.hex4(this.index + 2);
    let length = 6;
    if (point < 0) return false;
    if ((point & 0xf800) === 0xd800) {
      if ((point & 0x400) !== 0) return false;
      if (this.byte(this.index + 6) !== 92 || this.byte(this.index + 7) !== 117) return false;
      const low = this.hex4(this.index + 8);
      if (low < 0 || (low & 0xfc00) !== 0xdc00) return false;
      point = (((point & 0x3ff) << 10) | (low & 0x3ff)) + 0x10000;
      length = 12;
    }
    out.push(...Buffer.from(String.fromCodePoint(point), 'utf8'));
    this.index += length;
    return true;
  }

  /** Pushes a string token's value. */
  push(token: Token): void {
    if (token.size === undefined) pushBytes(this.L, token.value as Uint8Array);
    else api._lua_pushlstring(this.L, this.source + token.index + 1, token.size);
  }

  descend(): void {
    this.depth += 1;
    if (this.depth > MAX_DEPTH || api._lua_checkstack(this.L, 3) === 0)
      this.fail(`Found too many nested data structures (${this.depth}) at character ${this.index}`);
  }

  value(token: Token): void {
    const { L } = this;
    switch (token.type) {
      case T.String:
        this.push(token);
        return;
      case T.Number:
        api._lua_pushnumber(L, token.value as number);
        return;
      case T.Boolean:
        api._lua_pushboolean(L, token.value === true ? 1 : 0);
        return;
      case T.Null:
        api._lua_pushlightuserdata(L, JSON_NULL);
        return;
      case T.ObjBegin:
        this.object();
        return;
      case T.ArrBegin:
        this.array();
        return;
      default:
        this.expected('value', token);
    }
  }

  object(): void {
    const { L } = this;
    this.descend();
    api._lua_createtable(L, 0, 0);
    let token = this.next();
    if (token.type === T.ObjEnd) {
      this.depth -= 1;
      return;
    }
    for (;;) {
      if (token.type !== T.String) this.expected('object key string', token);
      this.push(token);
      token = this.next();
      if (token.type !== T.Colon) this.expected('colon', token);
      this.value(this.next());
      api._lua_rawset(L, -3);
      token = this.next();
      if (token.type === T.ObjEnd) {
        this.depth -= 1;
        return;
      }
      if (token.type !== T.Comma) this.expected('comma or object end', token);
      token = this.next();
    }
  }

  array(): void {
    const { L } = this;
    this.descend();
    api._lua_createtable(L, 0, 0);
    let token = this.next();
    if (token.type === T.ArrEnd) {
      this.depth -= 1;
      return;
    }
    for (let i = 1; ; i += 1) {
      this.value(token);
      api._lua_rawseti(L, -2, integer(i));
      token = this.next();
      if (token.type === T.ArrEnd) {
        this.depth -= 1;
        return;
      }
      if (token.type !== T.Comma) this.expected('comma or array end', token);
      token = this.next();
    }
  }
}

function strtod(text: string): number {
  const sign = text.startsWith('-') ? -1 : 1;
  const body = text.replace(/^[+-]/, '').toLowerCase();
  if (body.startsWith('inf')) return sign * Infinity;
  if (body.startsWith('nan')) return NaN;
  if (!body.startsWith('0x')) return sign * Number(body);
  const [mantissa = '', exponent = '0'] = body.slice(2).split('p');
  const [whole = '', fraction = ''] = mantissa.split('.');
  const digits = parseInt(`${whole}${fraction}` || '0', 16);
  return sign * digits * 2 ** (Number(exponent) - 4 * fraction.length);
}

/** `cjson.decode(text)`: pushes the value, or raises lua-cjson's error. */
export function decode(L: LuaState): number {
  if (api._lua_gettop(L) !== 1) {
    api._luaL_where(L, 1);
    pushText(L, "bad argument #1 to 'decode' (expected 1 argument)");
    api._lua_concat(L, 2);
    raise(L);
  }
  const type = api._lua_type(L, 1);
  const text = type === LUA_TSTRING || type === LUA_TNUMBER ? bytesAt(L, 1) : null;
  const parser = new Parser(L, text ?? Buffer.alloc(0), text === null ? 0 : stringAt(L, 1)[0]);
  if (text === null) parser.fail("bad argument #1 to 'decode' (string expected)");
  const data = text ?? Buffer.alloc(0);
  if (data.length >= 2 && (data[0] === 0 || data[1] === 0))
    parser.fail('JSON parser does not support UTF-16 or UTF-32');
  parser.value(parser.next());
  const end = parser.next();
  if (end.type !== T.End) parser.expected('the end', end);
  return 1;
}

const ENCODED: Readonly<Record<number, string>> = {
  34: '\\"',
  92: '\\\\',
  47: '\\/',
  8: '\\b',
  12: '\\f',
  10: '\\n',
  13: '\\r',
  9: '\\t',
};

function quote(bytes: Uint8Array): string {
  let text = '"';
  for (const byte of bytes) {
    const escaped = ENCODED[byte];
    if (escaped !== undefined) text += escaped;
    else if (byte < 32 || byte === 127) text += `\\u${byte.toString(16).padStart(4, '0')}`;
    else text += String.fromCharCode(byte);
  }
  return `${text}"`;
}

/** lua-cjson's `%.14g`. */
function number14(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e15) return String(n);
  const text = n.toPrecision(14);
  const [mantissa = '', exponent] = text.split('e');
  const trimmed = mantissa.includes('.') ? mantissa.replace(/\.?0+$/, '') : mantissa;
  if (exponent === undefined) return trimmed;
  const power = Number(exponent);
  return `${trimmed}e${power < 0 ? '-' : '+'}${String(Math.abs(power)).padStart(2, '0')}`;
}

/**
 * `cjson.encode(value)`: the same text as lua-cjson for what the scripts could hand it (strings are Latin-1 bytes in
 * the result, as lua-cjson copies them); sparse arrays and tables as keys are refused, as lua-cjson does.
 */
export function encode(L: LuaState): number {
  const fail = (message: string): never => {
    api._luaL_where(L, 1);
    pushText(L, message);
    api._lua_concat(L, 2);
    return raise(L);
  };
  const bytesOf = (text: string): Uint8Array => Uint8Array.from(text, (c) => c.charCodeAt(0));
  const textAt = (index: number, depth: number): string => {
    const type = api._lua_type(L, index);
    if (type === LUA_TNIL) return 'null';
    if (type === LUA_TBOOLEAN) return api._lua_toboolean(L, index) !== 0 ? 'true' : 'false';
    if (type === LUA_TNUMBER) {
      const n = api._lua_tonumberx(L, index, 0);
      if (!Number.isFinite(n)) return fail('Cannot serialise number: must not be NaN or Inf');
      return number14(n);
    }
    if (type === LUA_TSTRING) return quote(bytesAt(L, index) ?? new Uint8Array());
    if (type === LUA_TLIGHTUSERDATA && api._lua_touserdata(L, index) === JSON_NULL) return 'null';
    if (type !== LUA_TTABLE) return fail(`Cannot serialise ${typeName(type)}: type not supported`);
    if (depth > MAX_DEPTH) return fail(`Cannot serialise, excessive nesting (${depth})`);
    const table = api._lua_gettop(L) + 1;
    api._lua_pushvalue(L, index);
    const entries: Array<[string | number, string]> = [];
    let arrayLike = true;
    let max = 0;
    api._lua_pushnil(L);
    while (api._lua_next(L, table) !== 0) {
      const keyType = api._lua_type(L, -2);
      const key = keyType === LUA_TNUMBER ? api._lua_tonumberx(L, -2, 0) : undefined;
      if (key !== undefined && Number.isInteger(key) && key >= 1) max = Math.max(max, key);
      else arrayLike = false;
      if (keyType !== LUA_TNUMBER && keyType !== LUA_TSTRING)
        return fail('Cannot serialise table: table key must be a number or string');
      api._lua_pushvalue(L, -2);
      const name = String.fromCharCode(...(bytesAt(L, -1) ?? []));
      api._lua_settop(L, -2);
      entries.push([key ?? name, textAt(api._lua_gettop(L), depth + 1)]);
      api._lua_settop(L, -2);
    }
    api._lua_settop(L, table - 1);
    if (entries.length === 0) return '{}';
    if (arrayLike) {
      if (max > entries.length * 2 && max > 10) return fail('Cannot serialise table: excessively sparse array');
      const items = Array<string>(max).fill('null');
      for (const [key, text] of entries) items[(key as number) - 1] = text;
      return `[${items.join(',')}]`;
    }
    return `{${entries
      .map(([key, text]) => `${quote(bytesOf(typeof key === 'number' ? number14(key) : key))}:${text}`)
      .join(',')}}`;
  };
  const text = textAt(1, 1);
  pushBytes(L, bytesOf(text));
  return 1;
}

function typeName(type: number): string {
  return (
    ['nil', 'boolean', 'lightuserdata', 'number', 'string', 'table', 'function', 'userdata', 'thread'][type] ?? '?'
  );
}
