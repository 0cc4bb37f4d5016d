// A record's line (line.ts): what it supersedes, as stored in the record and read back from every script's answer.
import { describe, expect, it } from 'vitest';
import { encodeLine, lineOver, otherLine, parseLine } from '../src/line.js';

const seen = (id: string, generation: number) => ({ id, generation });

describe('lineOver', () => {
  it('names each record superseded once, newest first, and says nothing below a record whose line is unknown', () => {
    const known = { floor: 0, ids: [seen('b', 2), seen('a', 1)] };
    expect(lineOver([{ seen: seen('c', 3), line: known }])).toEqual({ floor: 0, ids: [seen('c', 3), ...known.ids] });
    // Another record over which the writer wrote, whose own line is unknown: nothing is promised below it.
    expect(
      lineOver([
        { seen: seen('c', 3), line: known },
        { seen: seen('x', 2), line: undefined },
      ]),
    ).toEqual({
      floor: 2,
      ids: [seen('c', 3), seen('b', 2), seen('x', 2)],
    });
  });

  it('keeps at most 16 records: the floor rises past the generations it leaves out', () => {
    const ids = Array.from({ length: 20 }, (_, index) => seen(`r${20 - index}`, 20 - index));
    const line = lineOver([{ seen: seen('r21', 21), line: { floor: 0, ids } }]);
    expect(line.ids).toHaveLength(16);
    expect(line.floor).toBe(6);
    expect(line.ids.at(-1)).toEqual(seen('r6', 6));
  });
});

describe('otherLine', () => {
  const line = { floor: 2, ids: [seen('c', 3), seen('b', 2)] };
  it('is true only when the line reaches back to the held generation without naming the held record', () => {
    expect(otherLine(seen('x', 3), line)).toBe(true);
    expect(otherLine(seen('b', 2), line)).toBe(false);
    expect(otherLine(seen('a', 1), line)).toBe(false);
    expect(otherLine(seen('x', 3), undefined)).toBe(false);
  });
});

describe('encodeLine and parseLine', () => {
  it('read back what they wrote, marker ids included', () => {
    const line = { floor: 3, ids: [seen('rollback:Ab_9', 5), seen('Zz-1', 4)] };
    expect(parseLine(encodeLine(line))).toEqual(line);
    expect(parseLine(encodeLine({ floor: 0, ids: [] }))).toEqual({ floor: 0, ids: [] });
  });

  it('take a missing or malformed field as unknown', () => {
    for (const text of [undefined, '', 'x', '-1', '0,a', '0,a@0', '0,@3', '0,a@1.5', 7, 'a'.repeat(5000)]) {
      expect(parseLine(text)).toBeUndefined();
    }
  });
});
