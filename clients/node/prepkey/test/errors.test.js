// Argument errors are raised before anything is sent (the recording client
// proves nothing reached it), and -UNAVAILABLE is UnavailableError from
// every operation, never false or null.
'use strict';
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { execFile } = require('node:child_process');
const path = require('node:path');
const { Prepkey, PrepkeyError, UnavailableError } = require('prepkey');
const { configs, connect, wrap, unique, unavailablePort } = require('./helpers');

test('Prepkey refuses what is not an ioredis or node-redis client', () => {
  assert.throws(() => new Prepkey(), { name: 'TypeError', message: 'Prepkey needs an ioredis or node-redis client' });
  assert.throws(() => new Prepkey({}), {
    name: 'TypeError',
    message: 'Prepkey needs an ioredis client (callBuffer) or a node-redis client (sendCommand)',
  });
  assert.throws(() => new Prepkey({ callBuffer() {} }, { buffer: true }), { name: 'TypeError', message: 'unknown option "buffer"' });
  const { createCluster, createSentinel } = require('redis');
  for (const unsupported of [
    createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:1' }] }),
    createSentinel({ name: 'mymaster', sentinelRootNodes: [{ host: '127.0.0.1', port: 1 }] }),
  ]) {
    assert.throws(() => new Prepkey(unsupported), {
      name: 'TypeError',
      message: 'Prepkey needs a node-redis client from createClient or createClientPool, not a cluster or sentinel client',
    });
  }
});

const ns = 'args';
const body = async () => 'ran';

// Each case: [what, call(pk), error class, exact message].
const argumentCases = [
  ['name not a string', (pk) => pk.prepare(42, 'k', 'v'), TypeError, 'name must be a string, got type number'],
  ['name null', (pk) => pk.get(null, 'k'), TypeError, 'name must be a string, got null'],
  ['name empty', (pk) => pk.get('', 'k'), RangeError, 'invalid namespace name "": 1 to 64 of A-Z a-z 0-9 _ . -'],
  ['name with a space', (pk) => pk.getValue('user name', 'k'), RangeError, 'invalid namespace name "user name": 1 to 64 of A-Z a-z 0-9 _ . -'],
  ['name of 65 bytes', (pk) => pk.rollback('n'.repeat(65), 'k'), RangeError, `invalid namespace name "${'n'.repeat(65)}": 1 to 64 of A-Z a-z 0-9 _ . -`],
  ['name a Buffer', (pk) => pk.get(Buffer.from('ns'), 'k'), TypeError, 'name must be a string, got an instance of Buffer'],
  ['key empty', (pk) => pk.prepare(ns, '', 'v'), RangeError, 'key must not be empty'],
  ['key an empty Buffer', (pk) => pk.get(ns, Buffer.alloc(0)), RangeError, 'key must not be empty'],
  ['key a number', (pk) => pk.get(ns, 7), TypeError, 'key must be a string or a Buffer, got type number'],
  ['key undefined', (pk) => pk.rollbackIfEq(ns, undefined, 'v'), TypeError, 'key must be a string or a Buffer, got type undefined'],
  ['value null', (pk) => pk.prepare(ns, 'k', null), TypeError, 'value must be a string or a Buffer, got null'],
  ['value undefined', (pk) => pk.prepare(ns, 'k'), TypeError, 'value must be a string or a Buffer, got type undefined'],
  ['value a number', (pk) => pk.prepare(ns, 'k', 42), TypeError, 'value must be a string or a Buffer, got type number'],
  ['value an object', (pk) => pk.prepare(ns, 'k', { userId: 42 }), TypeError, 'value must be a string or a Buffer, got an instance of Object'],
  ['value an array', (pk) => pk.rollbackIfEq(ns, 'k', ['v']), TypeError, 'value must be a string or a Buffer, got an array'],
  ['ttl 0', (pk) => pk.prepare(ns, 'k', 'v', { ttl: 0 }), RangeError, 'ttl must be a positive integer number of milliseconds, got 0'],
  ['ttl negative', (pk) => pk.prepare(ns, 'k', 'v', { ttl: -5 }), RangeError, 'ttl must be a positive integer number of milliseconds, got -5'],
  ['ttl fractional', (pk) => pk.prepare(ns, 'k', 'v', { ttl: 1.5 }), RangeError, 'ttl must be a positive integer number of milliseconds, got 1.5'],
  ['ttl NaN', (pk) => pk.prepare(ns, 'k', 'v', { ttl: NaN }), RangeError, 'ttl must be a positive integer number of milliseconds, got NaN'],
  ['ttl a string', (pk) => pk.prepare(ns, 'k', 'v', { ttl: '100' }), TypeError, 'ttl must be a number of milliseconds or a Date, got type string'],
  ['ttl an invalid Date', (pk) => pk.prepare(ns, 'k', 'v', { ttl: new Date('nope') }), RangeError, 'ttl is an invalid Date'],
  ['options not an object', (pk) => pk.prepare(ns, 'k', 'v', 100), TypeError, 'options must be an object, got type number'],
  ['unknown option', (pk) => pk.prepare(ns, 'k', 'v', { ex: 10 }), TypeError, 'unknown option "ex"'],
  ['reprepare ifEq null', (pk) => pk.reprepare(ns, 'k', 'v', { ifEq: null }), TypeError, 'ifEq must be a string or a Buffer, got null'],
  ['reprepare keepTTL and ttl', (pk) => pk.reprepare(ns, 'k', 'v', { keepTTL: true, ttl: 1000 }), TypeError, 'options keepTTL and ttl cannot be used together'],
  ['reprepare keepTTL not boolean', (pk) => pk.reprepare(ns, 'k', 'v', { keepTTL: 'yes' }), TypeError, 'keepTTL must be a boolean, got type string'],
  ['changeKey oldKey empty', (pk) => pk.changeKey(ns, '', 'v', 'new', 'v'), RangeError, 'oldKey must not be empty'],
  ['changeKey newValue a number', (pk) => pk.changeKey(ns, 'old', 'v', 'new', 1), TypeError, 'newValue must be a string or a Buffer, got type number'],
  ['changeKey oldValue null', (pk) => pk.changeKey(ns, 'old', null, 'new', 'v'), TypeError, 'oldValue must be a string or a Buffer, got null'],
  ['ttlMs 0', (pk) => pk.prepare(ns, 'k', 'v', { ttlMs: 0 }), RangeError, 'ttlMs must be a positive integer number of milliseconds, got 0'],
  ['ttlMs fractional', (pk) => pk.prepare(ns, 'k', 'v', { ttlMs: 2.5 }), RangeError, 'ttlMs must be a positive integer number of milliseconds, got 2.5'],
  ['ttlMs a Date', (pk) => pk.prepare(ns, 'k', 'v', { ttlMs: new Date() }), TypeError, 'ttlMs must be a number of milliseconds, got an instance of Date'],
  ['ttlSeconds 0', (pk) => pk.prepare(ns, 'k', 'v', { ttlSeconds: 0 }), RangeError, 'ttlSeconds must be a positive number of seconds in whole milliseconds, got 0'],
  ['ttlSeconds finer than a ms', (pk) => pk.prepare(ns, 'k', 'v', { ttlSeconds: 0.0005 }), RangeError, 'ttlSeconds must be a positive number of seconds in whole milliseconds, got 0.0005'],
  ['ttlSeconds NaN', (pk) => pk.prepare(ns, 'k', 'v', { ttlSeconds: NaN }), RangeError, 'ttlSeconds must be a positive number of seconds in whole milliseconds, got NaN'],
  ['ttlSeconds a string', (pk) => pk.prepare(ns, 'k', 'v', { ttlSeconds: '5' }), TypeError, 'ttlSeconds must be a number of seconds, got type string'],
  ['expiresAt a number', (pk) => pk.prepare(ns, 'k', 'v', { expiresAt: 5 }), TypeError, 'expiresAt must be a Date, got type number'],
  ['expiresAt an invalid Date', (pk) => pk.prepare(ns, 'k', 'v', { expiresAt: new Date('nope') }), RangeError, 'expiresAt is an invalid Date'],
  ['two ttl options', (pk) => pk.prepare(ns, 'k', 'v', { ttlMs: 5, ttlSeconds: 5 }), TypeError, 'options ttlMs and ttlSeconds cannot be used together'],
  ['reprepare keepTTL and ttlSeconds', (pk) => pk.reprepare(ns, 'k', 'v', { keepTTL: true, ttlSeconds: 1 }), TypeError, 'options keepTTL and ttlSeconds cannot be used together'],
  ['changeKey equal keys', (pk) => pk.changeKey(ns, 'alice', 'v', 'alice', 'w'), RangeError, 'oldKey and newKey must differ'],
  ['changeKey equal bytes', (pk) => pk.changeKey(ns, 'é', 'v', Buffer.from('é'), 'w'), RangeError, 'oldKey and newKey must differ'],
  ['signal not a signal', (pk) => pk.prepare(ns, 'k', 'v', { signal: {} }), TypeError, 'signal must be an AbortSignal, got an instance of Object'],
  ['usingPrepare signal null', (pk) => pk.usingPrepare(ns, 'k', 'v', body, { signal: null }), TypeError, 'signal must be an AbortSignal, got null'],
  ['key codec without decode', (pk) => Promise.resolve().then(() => pk.key(ns, { codec: { encode: String } })), TypeError, 'codec must be an object with encode and decode functions, got an instance of Object'],
  ['key bad name', (pk) => Promise.resolve().then(() => pk.key('a b')), RangeError, 'invalid namespace name "a b": 1 to 64 of A-Z a-z 0-9 _ . -'],
  ['typed value the codec cannot write', (pk) => pk.key(ns).prepare('k', { x: undefined }), TypeError, 'x is undefined (use null): it has no JSON form'],
  ['mprepare not an array', (pk) => pk.mprepare({}), TypeError, 'entries must be an array of [name, key, value], got an instance of Object'],
  ['mprepare no entries', (pk) => pk.mprepare([]), RangeError, 'entries must hold 1 to 64 [name, key, value], got 0'],
  ['mprepare 65 entries', (pk) => pk.mprepare(Array.from({ length: 65 }, (_, i) => [ns, `k${i}`, 'v'])), RangeError, 'entries must hold 1 to 64 [name, key, value], got 65'],
  ['mprepare a pair', (pk) => pk.mprepare([[ns, 'k', 'v'], [ns, 'k2']]), TypeError, 'entries[1] must be [name, key, value], got an array'],
  ['mprepare a bad value in the last entry', (pk) => pk.mprepare([[ns, 'a', 'v'], [ns, 'b', 3]]), TypeError, 'entries[1] value must be a string or a Buffer, got type number'],
  ['mprepare an empty key', (pk) => pk.mprepare([[ns, '', 'v']]), RangeError, 'entries[0] key must not be empty'],
  ['usingPrepare body not a function', (pk) => pk.usingPrepare(ns, 'k', 'v', 'body'), TypeError, 'body must be a function, got type string'],
  ['usingPrepare empty key', (pk) => pk.usingPrepare(ns, '', 'v', body), RangeError, 'key must not be empty'],
  ['usingPrepare value null', (pk) => pk.usingPrepare(ns, 'k', null, body), TypeError, 'value must be a string or a Buffer, got null'],
  ['usingPrepare ttl 0', (pk) => pk.usingPrepare(ns, 'k', 'v', body, { ttl: 0 }), RangeError, 'ttl must be a positive integer number of milliseconds, got 0'],
];

// scan throws when called, before any iteration.
const scanCases = [
  ['scan name bad', (pk) => pk.scan('a b'), RangeError, 'invalid namespace name "a b": 1 to 64 of A-Z a-z 0-9 _ . -'],
  ['scan count 0', (pk) => pk.scan(ns, { count: 0 }), RangeError, 'count must be an integer from 1 to 1000, got 0'],
  ['scan count 1001', (pk) => pk.scan(ns, { count: 1001 }), RangeError, 'count must be an integer from 1 to 1000, got 1001'],
  ['scan count a string', (pk) => pk.scan(ns, { count: '10' }), TypeError, 'count must be a number, got type string'],
  ['scan live and expired', (pk) => pk.scan(ns, { live: true, expired: true }), TypeError, 'options live and expired cannot be used together'],
  ['scan match a number', (pk) => pk.scan(ns, { match: 5 }), TypeError, 'match must be a string or a Buffer, got type number'],
  ['scan unknown option', (pk) => pk.scan(ns, { cursor: '0' }), TypeError, 'unknown option "cursor"'],
];

for (const config of configs) {
  describe(config.label, () => {
    let conn;
    let down;
    before(async () => {
      conn = await connect(config);
      down = await connect(config, unavailablePort);
    });
    after(async () => {
      await conn.close();
      await down.close();
    });

    test('argument errors before anything is sent', async () => {
      // The recording client forwards to the real sidecar: anything the
      // helper sent would show in `sent`.
      const recorder = wrap(conn.client);
      const pk = new Prepkey(recorder);
      for (const [what, call, type, message] of argumentCases) {
        await assert.rejects(call(pk), (err) => {
          assert.equal(err.constructor, type, `${what}: ${err}`);
          assert.equal(err.message, message, what);
          return true;
        }, what);
      }
      for (const [what, call, type, message] of scanCases) {
        assert.throws(() => call(pk), (err) => {
          assert.equal(err.constructor, type, `${what}: ${err}`);
          assert.equal(err.message, message, what);
          return true;
        }, what);
      }
      assert.deepEqual(recorder.sent, []);
      // The same recording client does see a valid command: the proof above
      // is not vacuous.
      assert.equal(await pk.get(ns, unique('k')), null);
      assert.equal(recorder.sent.length, 1);
    });

    test('usingPrepare with bad arguments does not run the body', async () => {
      let ran = 0;
      const pk = new Prepkey(wrap(conn.client));
      await assert.rejects(pk.usingPrepare(ns, '', 'v', () => { ran++; }), RangeError);
      assert.equal(ran, 0);
    });

    test('-UNAVAILABLE from every operation is UnavailableError', async () => {
      const pk = new Prepkey(down.client);
      const calls = [
        ['PK.PREPARE', () => pk.prepare(ns, 'k', 'v')],
        ['PK.GET', () => pk.get(ns, 'k')],
        ['PK.GETVALUE', () => pk.getValue(ns, 'k')],
        ['PK.ROLLBACK', () => pk.rollback(ns, 'k')],
        ['PK.ROLLBACK', () => pk.rollbackIfEq(ns, 'k', 'v')],
        ['PK.REPREPARE', () => pk.reprepare(ns, 'k', 'v', { keepTTL: true })],
        ['PK.REPREPARE', () => pk.changeKey(ns, 'old', 'v', 'new', 'v')],
        ['PK.MPREPARE', () => pk.mprepare([[ns, 'a', 'v'], [ns, 'b', 'v']])],
        ['PK.SCAN', () => pk.scan(ns).next()],
      ];
      for (const [command, call] of calls) {
        const err = await call().then((reply) => ({ reply }), (e) => e);
        assert.ok(err instanceof UnavailableError, `${command}: got ${JSON.stringify(err)}`);
        assert.ok(err instanceof PrepkeyError);
        assert.equal(err.name, 'UnavailableError');
        assert.equal(err.code, 'UNAVAILABLE');
        assert.equal(err.command, command);
        assert.match(err.message, /^UNAVAILABLE \S/);
      }
      // Argument errors still come first, without a round trip.
      await assert.rejects(pk.prepare(ns, '', 'v'), RangeError);
      // The unavailable sidecar itself answers: it is the backend that is down.
      assert.equal(await down.client.ping(), 'PONG');
    });

    test('a transport error is passed through as the library raised it', async () => {
      const lost = await connect(config);
      const pk = new Prepkey(lost.client);
      await lost.close();
      const err = await pk.get(ns, 'k').then(() => null, (e) => e);
      assert.ok(err instanceof Error, `got ${err}`);
      assert.ok(!(err instanceof PrepkeyError), `got ${err.name}: ${err.message}`);
      assert.equal(err.message, config.library === 'ioredis' ? 'Connection is closed.' : 'The client is closed');
    });
  });
}

// A bare ttl number (milliseconds here, seconds in Python) still works, as
// PX, and warns once per process; run in a child so that "once" is this
// test's.
test('a ttl number: PX as before, one DeprecationWarning per process', async () => {
  const script = `
    const { Prepkey } = require(${JSON.stringify(require.resolve('prepkey'))});
    const sent = [];
    const pk = new Prepkey({ callBuffer: async (...args) => { sent.push(args); return 1; } });
    (async () => {
      await pk.prepare('ns', 'k', 'v', { ttl: 5 });
      await pk.usingPrepare('ns', 'k', 'v', () => {}, { ttl: 6 });
      await pk.prepare('ns', 'k', 'v', { ttl: new Date(7) });
      console.log(JSON.stringify(sent));
    })();`;
  const { stdout, stderr } = await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script], (err, out, errOut) => (err ? reject(err) : resolve({ stdout: out, stderr: errOut })));
  });
  assert.deepEqual(JSON.parse(stdout), [
    ['PK.PREPARE', 'ns', 'k', 'v', 'PX', '5'],
    ['PK.PREPARE', 'ns', 'k', 'v', 'PX', '6'],
    ['PK.PREPARE', 'ns', 'k', 'v', 'PXAT', '7'],
  ]);
  const warnings = stderr.split('\n').filter((line) => line.includes('DeprecationWarning'));
  assert.deepEqual(warnings.map((line) => line.replace(/^\(node:\d+\) /, '')), [
    '[PREPKEY_TTL_NUMBER] DeprecationWarning: prepkey: a number `ttl` is milliseconds here and seconds in the Python helper; use ttlMs, ttlSeconds or expiresAt (a Date)',
  ]);
});

// The helper never opens a connection, so it never closes one: every
// operation runs over a client whose quit, disconnect, close and destroy
// fail the test.
for (const config of configs) {
  test(`${config.label}: the helper never closes the client it was given`, async () => {
    const conn = await connect(config);
    try {
      const closed = [];
      const client = wrap(conn.client);
      for (const method of ['quit', 'disconnect', 'close', 'destroy', 'end']) client[method] = () => closed.push(method);
      const pk = new Prepkey(client);
      const ns = unique('own');
      await pk.prepare(ns, 'a', 'v', { ttlSeconds: 60 });
      await pk.usingPrepare(ns, 'b', 'v', async () => { throw new Error('x'); }).catch(() => {});
      await pk.usingPrepare(ns, 'a', 'v', async (prepared) => prepared);
      await pk.key(ns).usingPrepare('c', { id: 1 }, async () => true);
      await pk.changeKey(ns, 'a', 'v', 'a2', 'v');
      for await (const record of pk.scan(ns)) void record;
      assert.deepEqual(closed, []);
      assert.ok(client.sent.length >= 6);
    } finally {
      await conn.close();
    }
  });
}
