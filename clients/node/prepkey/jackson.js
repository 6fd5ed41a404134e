// The default codec of the typed handle (Prepkey#key): JSON written byte for
// byte as Jackson writes a Kotlin data class (Wow's JsonSerializer), so that
// a PK.ROLLBACK … IFEQ or REPREPARE … IFEQ made here matches a record Wow
// wrote on the same Redis (layout=wow). The rules, and the bytes the tests
// hold this to, are in clients/testdata/jackson.json.
//
// JavaScript has one number type where Kotlin has Int, Long and Double:
// 100 could be Int 100 (written "100") or Double 100.0 (written "100.0").
// A number that is not a whole number can only be a Double; a whole one is
// written as an integer unless the caller says it is a Double, with
// jackson.double(x) around the value or 'double' in the codec's schema
// (jackson.codec({amount: 'double'})). A Long beyond 2^53 is a BigInt.
'use strict';

/** A number to be written as a Kotlin Double (100 → 100.0). */
class JacksonDouble {
  constructor(value) {
    if (typeof value !== 'number') throw new TypeError(`jackson.double needs a number, got ${typeof value}`);
    this.value = value;
    Object.freeze(this);
  }
}

function double(value) {
  return new JacksonDouble(value);
}

// formatDouble writes x as Java's Double.toString does (JDK 19 and later,
// the shortest digits that read back as x, as JavaScript's toExponential()
// gives them), plain
// with at least one fraction digit when 1e-3 <= |x| < 1e7, else
// d.ddd…E[-]n with at least one fraction digit.
function formatDouble(x) {
  if (!Number.isFinite(x)) {
    throw new RangeError(`${x} has no JSON form (Jackson would write a string or fail): not written`);
  }
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0';
  const sign = x < 0 ? '-' : '';
  // Java writes at least two digits; when one is the shortest it picks the
  // two closest to x (Double.MIN_VALUE is 4.9E-324, not 5.0E-324), which is
  // what toExponential(1) rounds to.
  let [mantissa, exp] = Math.abs(x).toExponential().split('e');
  if (mantissa.length === 1) [mantissa, exp] = Math.abs(x).toExponential(1).split('e');
  // (Trailing zeros of those two are not written: 0.002, 1.0E23.)
  const digits = mantissa.replace('.', '').replace(/(?<=.)0+$/, '');
  const e = Number(exp);
  const abs = Math.abs(x);
  if (abs >= 1e-3 && abs < 1e7) {
    if (e >= 0) {
      const whole = digits.slice(0, e + 1).padEnd(e + 1, '0');
      const fraction = digits.slice(e + 1) || '0';
      return `${sign}${whole}.${fraction}`;
    }
    return `${sign}0.${'0'.repeat(-e - 1)}${digits}`;
  }
  return `${sign}${digits[0]}.${digits.slice(1) || '0'}E${e}`;
}

const SHORT_ESCAPES = { 8: '\\b', 9: '\\t', 10: '\\n', 12: '\\f', 13: '\\r', 34: '\\"', 92: '\\\\' };

// quote writes s as Jackson does: only ", \ and the controls below 0x20 are
// escaped (\b \t \n \f \r short, others \u00XX upper-case); no HTML
// escaping; everything else, DEL and U+2028 included, as is (UTF-8).
function quote(s) {
  let out = '"';
  let from = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c !== 34 && c !== 92) continue;
    out += s.slice(from, i) + (SHORT_ESCAPES[c] ?? `\\u00${c.toString(16).toUpperCase().padStart(2, '0')}`);
    from = i + 1;
  }
  return out + s.slice(from) + '"';
}

// write appends value's JSON to out; schema (a type name, an object of
// field schemas, or [element schema]) marks which numbers are Doubles.
function write(value, schema, path) {
  if (value === null) return 'null';
  if (value instanceof JacksonDouble) return formatDouble(value.value);
  switch (typeof value) {
    case 'string': return quote(value);
    case 'boolean': return value ? 'true' : 'false';
    case 'bigint': return value.toString();
    case 'number':
      // A whole number is an Int or a Long unless the schema says Double,
      // or it is past 2^53 (a Long there must be a BigInt to be exact).
      if (schema === 'double' || !Number.isSafeInteger(value)) return formatDouble(value);
      return String(value);
    case 'object':
      break;
    default:
      throw new TypeError(`${path || 'value'} is ${typeof value === 'undefined' ? 'undefined (use null)' : `a ${typeof value}`}: it has no JSON form`);
  }
  if (Array.isArray(value)) {
    const element = Array.isArray(schema) ? schema[0] : undefined;
    return `[${value.map((v, i) => write(v, element, `${path}[${i}]`)).join(',')}]`;
  }
  if (value instanceof Date || Buffer.isBuffer(value) || ArrayBuffer.isView(value)) {
    throw new TypeError(`${path || 'value'} is an instance of ${value.constructor.name}: write it as a string or number first`);
  }
  const fields = isSchemaObject(schema) ? schema : {};
  const entries = value instanceof Map ? [...value.entries()] : Object.entries(value);
  const parts = entries.map(([k, v]) => {
    if (typeof k !== 'string') throw new TypeError(`${path || 'value'} has a key that is not a string: ${String(k)}`);
    return `${quote(k)}:${write(v, Object.hasOwn(fields, k) ? fields[k] : fields['*'], path ? `${path}.${k}` : k)}`;
  });
  return `{${parts.join(',')}}`;
}

function isSchemaObject(schema) {
  return schema !== null && typeof schema === 'object' && !Array.isArray(schema);
}

const SCHEMA_TYPES = ['double', 'int', 'long', 'string', 'boolean', 'any'];

function checkSchema(schema, path) {
  if (schema === undefined) return;
  if (typeof schema === 'string') {
    if (!SCHEMA_TYPES.includes(schema)) {
      throw new TypeError(`schema${path}: unknown type ${JSON.stringify(schema)} (one of ${SCHEMA_TYPES.join(', ')}, an object of fields, or [element])`);
    }
    return;
  }
  if (Array.isArray(schema)) {
    if (schema.length !== 1) throw new TypeError(`schema${path}: an array schema holds one element schema`);
    checkSchema(schema[0], `${path}[]`);
    return;
  }
  if (!isSchemaObject(schema)) throw new TypeError(`schema${path}: must be a type name, an object of fields or [element]`);
  for (const [k, v] of Object.entries(schema)) checkSchema(v, `${path}.${k}`);
}

/** The JSON of value, as Jackson writes it (see the top of this file). */
function stringify(value, schema) {
  checkSchema(schema, '');
  return write(value, schema, '');
}

/**
 * A codec for the typed handle: encode writes Jackson's bytes (schema marks
 * Double fields: {amount: 'double'}, nested {lines: [{price: 'double'}]},
 * '*' for every field of a map), decode is JSON.parse (numbers come back as
 * numbers; encode with the same schema writes them back the same).
 */
function codec(schema) {
  checkSchema(schema, '');
  return {
    encode: (value) => Buffer.from(write(value, schema, ''), 'utf8'),
    decode: (bytes) => JSON.parse(Buffer.isBuffer(bytes) ? bytes.toString('utf8') : String(bytes)),
  };
}

module.exports = { double, stringify, codec, formatDouble, JacksonDouble };
