// Every operation against the real sidecar, with exact replies, over both
// libraries in RESP2 and RESP3.
'use strict';
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { Prepkey, PrepkeyError, MismatchError, UnavailableError } = require('prepkey');
const { configs, connect, wrap, unique, until } = require('./helpers');

// An expiry far enough ahead not to pass during the test.
function later(ms = 3600000) {
  return new Date(Date.now() + ms);
}

// An expiry that passes soon, with a second's margin for the PXAT to still
// be ahead when a busy machine gets the command to the sidecar (a PXAT
// already past is refused).
function soon() {
  return new Date(Date.now() + 1000);
}

for (const config of configs) {
  describe(config.label, () => {
    let conn;
    let pk;
    let ns;
    before(async () => {
      conn = await connect(config);
      pk = new Prepkey(conn.client);
    });
    after(() => conn.close());
    // A namespace per case keeps scans exact.
    const fresh = () => { ns = unique('ops'); return ns; };

    test('detects the library; the connection speaks the RESP version of the configuration', async () => {
      assert.equal(pk.library, config.library);
      const info = String(config.library === 'ioredis'
        ? await conn.client.call('CLIENT', 'INFO')
        : await conn.client.sendCommand(['CLIENT', 'INFO']));
      assert.match(info, new RegExp(` resp=${config.resp} `));
    });

    test('prepare, get, getValue: reserved, taken, forever', async () => {
      fresh();
      assert.equal(await pk.prepare(ns, 'alice', '{"userId":"42"}'), true);
      assert.equal(await pk.prepare(ns, 'alice', '{"userId":"7"}'), false);
      assert.equal(await pk.get(ns, 'alice'), '{"userId":"42"}');
      assert.deepEqual(await pk.getValue(ns, 'alice'), { value: '{"userId":"42"}', expiresAt: null });
      assert.equal(await pk.get(ns, 'bob'), null);
      assert.equal(await pk.getValue(ns, 'bob'), null);
    });

    test('an empty value is a value', async () => {
      fresh();
      assert.equal(await pk.prepare(ns, 'k', ''), true);
      assert.equal(await pk.get(ns, 'k'), '');
      assert.deepEqual(await pk.getValue(ns, 'k'), { value: '', expiresAt: null });
    });

    test('binary keys and values round-trip byte for byte with buffers: true', async () => {
      fresh();
      const bin = new Prepkey(conn.client, { buffers: true });
      const key = Buffer.from([0, 255, 13, 10, 107]);
      const value = Buffer.from([...Array(256).keys()]);
      assert.equal(await bin.prepare(ns, key, value), true);
      assert.deepEqual(await bin.get(ns, key), value);
      assert.deepEqual(await bin.getValue(ns, key), { value, expiresAt: null });
      // A Uint8Array view is the same bytes.
      assert.deepEqual(await bin.get(ns, new Uint8Array(key)), value);
      // UTF-8 strings and their bytes are the same key.
      assert.equal(await pk.prepare(ns, 'é', 'ü'), true);
      assert.deepEqual(await bin.get(ns, Buffer.from('é')), Buffer.from('ü'));
      assert.equal(await pk.get(ns, Buffer.from('é')), 'ü');
    });

    test('prepare with a Date: getValue.expiresAt is that PXAT', async () => {
      fresh();
      const at = later();
      assert.equal(await pk.prepare(ns, 'k', 'v', { ttl: at }), true);
      const record = await pk.getValue(ns, 'k');
      assert.deepEqual(record, { value: 'v', expiresAt: at });
      assert.equal(record.expiresAt.getTime(), at.getTime());
    });

    test('prepare with milliseconds: PX counted from the command', async () => {
      fresh();
      const before_ = Date.now();
      assert.equal(await pk.prepare(ns, 'k', 'v', { ttl: 60000 }), true);
      const after_ = Date.now();
      const { expiresAt } = await pk.getValue(ns, 'k');
      assert.ok(expiresAt.getTime() >= before_ + 60000 - 5 && expiresAt.getTime() <= after_ + 60000 + 5,
        `expiresAt ${expiresAt.getTime()} not within [${before_ + 60000}, ${after_ + 60000}]`);
    });

    // Each unit reaches the sidecar as its own TTL word: whole seconds EX,
    // a sub-second ttlSeconds PX in milliseconds (not rounded to a second),
    // ttlMs PX, a Date PXAT; the expiry the sidecar keeps has ms precision.
    test('ttlSeconds, ttlMs, expiresAt: EX, PX (sub-second, ms precision), PXAT', async () => {
      fresh();
      const recorder = wrap(conn.client);
      const rec = new Prepkey(recorder);
      const at = later();
      const cases = [
        ['a', { ttlSeconds: 0.25 }, ['PX', '250'], 250],
        ['b', { ttlSeconds: 5 }, ['EX', '5'], 5000],
        ['c', { ttlSeconds: 1.5 }, ['PX', '1500'], 1500],
        ['d', { ttlMs: 1234 }, ['PX', '1234'], 1234],
        ['e', { expiresAt: at }, ['PXAT', String(at.getTime())], null],
      ];
      for (const [key, options, words, ms] of cases) {
        const from = Date.now();
        assert.equal(await rec.prepare(ns, key, 'v', options), true);
        const to = Date.now();
        assert.deepEqual(recorder.sent.at(-1), ['PK.PREPARE', ns, key, 'v', ...words]);
        const { expiresAt } = await pk.getValue(ns, key);
        if (ms === null) {
          assert.deepEqual(expiresAt, at);
        } else {
          assert.ok(expiresAt.getTime() >= from + ms - 5 && expiresAt.getTime() <= to + ms + 5,
            `${key}: expiresAt ${expiresAt.getTime()} not within [${from + ms}, ${to + ms}]`);
        }
      }
      // The quarter second passes: the reservation is gone, not kept for a
      // whole second.
      await until('the 250 ms reservation to expire', async () => (await pk.get(ns, 'a')) === null);
      // The same units on the other commands.
      assert.equal(await rec.reprepare(ns, 'b', 'v2', { ttlSeconds: 0.5 }), true);
      assert.deepEqual(recorder.sent.at(-1), ['PK.REPREPARE', ns, 'b', 'v2', 'PX', '500']);
      assert.equal(await rec.changeKey(ns, 'b', 'v2', 'b2', 'v2', { ttlSeconds: 60 }), true);
      assert.deepEqual(recorder.sent.at(-1), ['PK.REPREPARE', ns, 'b2', 'v2', 'FROM', 'b', 'IFEQ', 'v2', 'EX', '60']);
      assert.equal(await rec.mprepare([[ns, 'f', 'v']], { ttlMs: 60000 }), true);
      assert.deepEqual(recorder.sent.at(-1), ['PK.MPREPARE', '1', ns, 'f', 'v', 'PX', '60000']);
    });

    test('an expired reservation: get null, getValue retained, prepare again', async () => {
      fresh();
      const at = soon();
      assert.equal(await pk.prepare(ns, 'k', 'v', { ttl: at }), true);
      await until('the reservation to expire', async () => (await pk.get(ns, 'k')) === null);
      assert.ok(Date.now() >= at.getTime());
      assert.deepEqual(await pk.getValue(ns, 'k'), { value: 'v', expiresAt: at });
      assert.equal(await pk.prepare(ns, 'k', 'v2'), true);
      assert.deepEqual(await pk.getValue(ns, 'k'), { value: 'v2', expiresAt: null });
    });

    test('rollback: true deleted, false no record', async () => {
      fresh();
      await pk.prepare(ns, 'k', 'v');
      assert.equal(await pk.rollback(ns, 'k'), true);
      assert.equal(await pk.getValue(ns, 'k'), null);
      assert.equal(await pk.rollback(ns, 'k'), false);
    });

    test('rollbackIfEq: false for another value (kept), true for its own', async () => {
      fresh();
      await pk.prepare(ns, 'k', 'mine');
      assert.equal(await pk.rollbackIfEq(ns, 'k', 'theirs'), false);
      assert.equal(await pk.get(ns, 'k'), 'mine');
      assert.equal(await pk.rollbackIfEq(ns, 'k', 'mine'), true);
      assert.equal(await pk.getValue(ns, 'k'), null);
      assert.equal(await pk.rollbackIfEq(ns, 'k', 'mine'), false);
    });

    test('reprepare: replace, ifEq, forever unless ttl, keepTTL', async () => {
      fresh();
      assert.equal(await pk.reprepare(ns, 'k', 'v'), false, 'no record');
      const first = later();
      await pk.prepare(ns, 'k', 'v1', { ttl: first });
      assert.equal(await pk.reprepare(ns, 'k', 'v2', { ifEq: 'other' }), false);
      assert.deepEqual(await pk.getValue(ns, 'k'), { value: 'v1', expiresAt: first });
      assert.equal(await pk.reprepare(ns, 'k', 'v2', { ifEq: 'v1', keepTTL: true }), true);
      assert.deepEqual(await pk.getValue(ns, 'k'), { value: 'v2', expiresAt: first });
      const second = later(7200000);
      assert.equal(await pk.reprepare(ns, 'k', 'v3', { ttl: second }), true);
      assert.deepEqual(await pk.getValue(ns, 'k'), { value: 'v3', expiresAt: second });
      assert.equal(await pk.reprepare(ns, 'k', 'v4'), true);
      assert.deepEqual(await pk.getValue(ns, 'k'), { value: 'v4', expiresAt: null });
    });

    test('reprepare of an expired record: false, record kept', async () => {
      fresh();
      const at = soon();
      await pk.prepare(ns, 'k', 'v', { ttl: at });
      await until('the reservation to expire', async () => (await pk.get(ns, 'k')) === null);
      assert.equal(await pk.reprepare(ns, 'k', 'v2'), false);
      assert.deepEqual(await pk.getValue(ns, 'k'), { value: 'v', expiresAt: at });
    });

    test('changeKey: true moved', async () => {
      fresh();
      await pk.prepare(ns, 'alice', 'u42');
      const at = later();
      assert.equal(await pk.changeKey(ns, 'alice', 'u42', 'alice2', 'u42b', { ttl: at }), true);
      assert.equal(await pk.getValue(ns, 'alice'), null);
      assert.deepEqual(await pk.getValue(ns, 'alice2'), { value: 'u42b', expiresAt: at });
    });

    test('changeKey: false when the new key is held, nothing changed', async () => {
      fresh();
      await pk.prepare(ns, 'alice', 'u42');
      await pk.prepare(ns, 'bob', 'u7');
      assert.equal(await pk.changeKey(ns, 'alice', 'u42', 'bob', 'u42'), false);
      assert.deepEqual(await pk.getValue(ns, 'alice'), { value: 'u42', expiresAt: null });
      assert.deepEqual(await pk.getValue(ns, 'bob'), { value: 'u7', expiresAt: null });
    });

    test('changeKey: MismatchError when the old key has another value, nothing changed', async () => {
      fresh();
      await pk.prepare(ns, 'alice', 'u42');
      const err = await pk.changeKey(ns, 'alice', 'u7', 'alice2', 'u7').then(() => null, (e) => e);
      assert.ok(err instanceof MismatchError, `got ${err}`);
      assert.ok(err instanceof PrepkeyError);
      assert.equal(err.name, 'MismatchError');
      assert.equal(err.code, 'MISMATCH');
      assert.equal(err.command, 'PK.REPREPARE');
      assert.equal(err.message, 'MISMATCH old key has no record with that value');
      assert.deepEqual(await pk.getValue(ns, 'alice'), { value: 'u42', expiresAt: null });
      assert.equal(await pk.getValue(ns, 'alice2'), null, 'the new key is not left reserved');
      // No record at all for the old key: the same.
      await assert.rejects(pk.changeKey(ns, 'nobody', 'u7', 'alice3', 'u7'), MismatchError);
      assert.equal(await pk.getValue(ns, 'alice3'), null);
    });

    test('mprepare: all reserved with one PXAT', async () => {
      fresh();
      const other = unique('ops');
      const at = later();
      assert.equal(await pk.mprepare([[ns, 'alice', 'u1'], [other, 'alice@example.com', 'u1']], { ttl: at }), true);
      assert.deepEqual(await pk.getValue(ns, 'alice'), { value: 'u1', expiresAt: at });
      assert.deepEqual(await pk.getValue(other, 'alice@example.com'), { value: 'u1', expiresAt: at });
    });

    test('mprepare: false when one key is held, none reserved', async () => {
      fresh();
      await pk.prepare(ns, 'held', 'theirs');
      const entries = [[ns, 'a', 'mine'], [ns, 'held', 'mine'], [ns, 'z', 'mine']];
      assert.equal(await pk.mprepare(entries), false);
      assert.equal(await pk.getValue(ns, 'a'), null);
      assert.equal(await pk.getValue(ns, 'z'), null);
      assert.deepEqual(await pk.getValue(ns, 'held'), { value: 'theirs', expiresAt: null });
    });

    test('scan: every record across several pages, exactly', async () => {
      fresh();
      const want = new Map();
      const at = later();
      for (let i = 0; i < 25; i++) {
        const key = `key${String(i).padStart(2, '0')}`;
        const ttl = i % 2 ? at : undefined;
        await pk.prepare(ns, key, `value${i}`, { ttl });
        want.set(key, { key, value: `value${i}`, expiresAt: ttl ?? null });
      }
      const recorder = wrap(conn.client);
      const got = new Map();
      for await (const record of new Prepkey(recorder).scan(ns, { count: 3 })) got.set(record.key, record);
      assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort());
      assert.deepEqual(got, new Map([...got.keys()].map((k) => [k, want.get(k)])));
      const pages = recorder.sent.filter((args) => args[0] === 'PK.SCAN');
      assert.ok(pages.length >= 3, `${pages.length} pages`);
      assert.deepEqual(pages[0], ['PK.SCAN', ns, '0', 'COUNT', '3']);
      // Each later page sends back the cursor the previous page answered.
      for (const page of pages.slice(1)) assert.notEqual(String(page[2]), '0');
    });

    test('scan: match, live, expired', async () => {
      fresh();
      await pk.prepare(ns, 'user:1', 'a');
      await pk.prepare(ns, 'user:2', 'b');
      await pk.prepare(ns, 'order:1', 'c');
      const old = soon();
      await pk.prepare(ns, 'user:old', 'd', { ttl: old });
      await until('the reservation to expire', async () => (await pk.get(ns, 'user:old')) === null);
      const keys = async (options) => {
        const out = [];
        for await (const record of pk.scan(ns, options)) out.push(record.key);
        return out.sort();
      };
      assert.deepEqual(await keys(), ['order:1', 'user:1', 'user:2', 'user:old']);
      assert.deepEqual(await keys({ match: 'user:*' }), ['user:1', 'user:2', 'user:old']);
      assert.deepEqual(await keys({ match: 'user:*', live: true }), ['user:1', 'user:2']);
      assert.deepEqual(await keys({ expired: true }), ['user:old']);
      const expired = [];
      for await (const record of pk.scan(ns, { expired: true })) expired.push(record);
      assert.deepEqual(expired, [{ key: 'user:old', value: 'd', expiresAt: old }]);
      // A namespace with no records: none.
      const none = [];
      for await (const record of pk.scan(unique('empty'))) none.push(record);
      assert.deepEqual(none, []);
    });

    test('scan with buffers: true yields Buffers', async () => {
      fresh();
      const key = Buffer.from([0, 1, 2, 255]);
      const value = Buffer.from([255, 0]);
      const bin = new Prepkey(conn.client, { buffers: true });
      await bin.prepare(ns, key, value);
      const got = [];
      for await (const record of bin.scan(ns)) got.push(record);
      assert.deepEqual(got, [{ key, value, expiresAt: null }]);
    });

    test('other sidecar errors: PrepkeyError with the reply text', async () => {
      fresh();
      const cases = [
        [() => pk.prepare(ns, 'k', 'v', { ttl: new Date(Date.now() - 60000) }), "ERR invalid expire time in 'pk.prepare' command"],
        [() => pk.prepare(ns, 'k'.repeat(1025), 'v'), 'ERR key is larger than max-key-bytes (1024)'],
        [() => pk.mprepare([[ns, 'k', 'v'], [ns, 'k', 'w']]), "ERR duplicate key in 'pk.mprepare'"],
      ];
      for (const [call, message] of cases) {
        const err = await call().then(() => null, (e) => e);
        assert.ok(err instanceof PrepkeyError, `${message}: got ${err}`);
        assert.ok(!(err instanceof UnavailableError) && !(err instanceof MismatchError));
        assert.equal(err.name, 'PrepkeyError');
        assert.equal(err.message, message);
        assert.equal(err.code, 'ERR');
      }
      assert.equal(await pk.getValue(ns, 'k'), null, 'nothing stored');
    });
  });
}

// A node-redis pool sends each command on one of its clients, through the
// same sendCommand(args, options).
for (const RESP of [2, 3]) {
  test(`node-redis createClientPool RESP${RESP}`, async () => {
    const { createClientPool } = require('redis');
    const pool = createClientPool({
      socket: { host: process.env.PREPKEY_HOST || '127.0.0.1', port: Number(process.env.PREPKEY_PORT) },
      password: process.env.PREPKEY_PASSWORD,
      RESP,
    });
    pool.on('error', () => {});
    await pool.connect();
    try {
      const pk = new Prepkey(pool);
      const ns = unique('pool');
      const at = later();
      assert.equal(pk.library, 'node-redis');
      assert.equal(await pk.prepare(ns, 'k', 'v', { ttl: at }), true);
      assert.equal(await pk.prepare(ns, 'k', 'w'), false);
      assert.deepEqual(await pk.getValue(ns, 'k'), { value: 'v', expiresAt: at });
      assert.equal(await pk.usingPrepare(ns, 'k2', 'v', async (prepared) => prepared), true);
    } finally {
      await pool.close();
    }
  });
}
