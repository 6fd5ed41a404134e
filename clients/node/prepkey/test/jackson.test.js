// The default codec against the bytes Jackson writes (clients/testdata/
// jackson.json, shared with the Go and Python helpers): every case of the
// file, byte for byte, and no case left out. No sidecar needed.
'use strict';
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { jackson } = require('prepkey');

const { jacksonFile: file } = require('./helpers');
const { cases } = JSON.parse(fs.readFileSync(file, 'utf8'));

// Each case of the file as JavaScript writes the Kotlin value: a Double
// field is marked by the schema (or jackson.double), a Long past 2^53 is a
// BigInt. The object literals keep the data classes' field order.
const D = { x: 'double' };
const values = {
  'strings': [{ userId: '42', name: 'Zoë' }],
  'top-level string': ['abc'],
  'double fraction': [{ sku: 'A-1', amount: 9.99 }, { amount: 'double' }],
  'double whole': [{ x: 100 }, D],
  'double 1e7': [{ x: 1e7 }, D],
  'double below 1e7': [{ x: 1234567 }, D],
  'double above 1e7': [{ x: 12345678.9 }, D],
  'double 1e-3': [{ x: 0.001 }, D],
  'double below 1e-3': [{ x: 1e-4 }, D],
  'double negative zero': [{ x: -0 }, D],
  'double shortest': [{ x: 0.1 + 0.2 }, D],
  'double large': [{ x: 1e21 }, D],
  'double negative': [{ x: -2.5e-8 }, D],
  'int and long': [{ i: -5, l: 9007199254740993n }],
  'boolean and null': [{ ok: true, note: null }],
  'escapes': [{ s: 'a"b\\c\n\t\r\b\f\u0001\u001F</script>&\'\u007F\u2028😀' }],
  'nested': [{ id: 'o1', lines: [{ sku: 'a', qty: 2 }, { sku: 'b', qty: 1 }], total: 19.5 }, { lines: [{ qty: 'int' }], total: 'double' }],
  'empty collections': [{ tags: [], attrs: {} }],
};

test('every case of jackson.json has a value here', () => {
  assert.deepEqual(Object.keys(values).sort(), cases.map((c) => c.name).sort());
});

for (const c of cases) {
  test(`jackson: ${c.name}`, () => {
    const [value, schema] = values[c.name];
    const want = Buffer.from(c.expected, 'utf8');
    assert.equal(jackson.stringify(value, schema), c.expected);
    assert.deepEqual(jackson.codec(schema).encode(value), want);
    // A decoded value written again with the same schema gives the same
    // bytes (below 2^53: JSON.parse reads a Long as a number).
    if (c.name !== 'int and long') {
      const codec = jackson.codec(schema);
      assert.deepEqual(codec.encode(codec.decode(want)), want);
    }
  });
}

test('jackson.double marks one number without a schema', () => {
  assert.equal(jackson.stringify({ x: jackson.double(100) }), '{"x":100.0}');
  assert.equal(jackson.stringify([jackson.double(-0), jackson.double(5e-324), jackson.double(1.7976931348623157e308)]),
    '[-0.0,4.9E-324,1.7976931348623157E308]');
  // Without a mark, a whole number is an Int and a fraction a Double.
  assert.equal(jackson.stringify({ i: 100, d: 0.5, big: 1e21 }), '{"i":100,"d":0.5,"big":1.0E21}');
  // '*' marks every field of a map.
  assert.equal(jackson.stringify(new Map([['a', 1], ['b', 2]]), { '*': 'double' }), '{"a":1.0,"b":2.0}');
});

test('values with no Jackson form are refused', () => {
  assert.throws(() => jackson.stringify({ x: NaN }, D), { name: 'RangeError', message: 'NaN has no JSON form (Jackson would write a string or fail): not written' });
  assert.throws(() => jackson.stringify({ x: undefined }), { name: 'TypeError', message: 'x is undefined (use null): it has no JSON form' });
  assert.throws(() => jackson.stringify({ at: new Date(0) }), { name: 'TypeError', message: 'at is an instance of Date: write it as a string or number first' });
  assert.throws(() => jackson.codec({ x: 'float' }), { name: 'TypeError', message: 'schema.x: unknown type "float" (one of double, int, long, string, boolean, any, an object of fields, or [element])' });
  assert.throws(() => jackson.double('1'), { name: 'TypeError', message: 'jackson.double needs a number, got string' });
});
