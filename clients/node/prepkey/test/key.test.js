// The typed, name-bound handle (pk.key) against the real sidecars: values
// go through the codec (Jackson's JSON by default) and IFEQ matches records
// holding the bytes Jackson writes (clients/testdata/jackson.json), as Wow
// writes them.
'use strict';
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Prepkey, PrepareKey, jackson } = require('prepkey');
const { configs, connect, wrap, unique } = require('./helpers');

const { jacksonFile } = require('./helpers');
const { cases } = JSON.parse(fs.readFileSync(jacksonFile, 'utf8'));
const expected = (name) => cases.find((c) => c.name === name).expected;

for (const config of configs) {
  describe(config.label, () => {
    let conn;
    let pk;
    before(async () => {
      conn = await connect(config);
      pk = new Prepkey(conn.client);
    });
    after(() => conn.close());

    test('every operation over typed values, Jackson bytes on the wire', async () => {
      const ns = unique('typed');
      const recorder = wrap(conn.client);
      const users = new Prepkey(recorder).key(ns);
      assert.ok(users instanceof PrepareKey);
      assert.equal(users.name, ns);
      const alice = { userId: '42', name: 'Zoë' };
      assert.equal(await users.prepare('alice', alice), true);
      // The bytes sent are Jackson's, as a Buffer.
      assert.deepEqual(recorder.sent[0].slice(0, 3), ['PK.PREPARE', ns, 'alice']);
      assert.equal(String(recorder.sent[0][3]), expected('strings'));
      assert.equal(await pk.get(ns, 'alice'), expected('strings'));
      assert.equal(await users.prepare('alice', { userId: '7', name: 'Eve' }), false);
      assert.deepEqual(await users.get('alice'), alice);
      assert.deepEqual(await users.getValue('alice'), { value: alice, expiresAt: null });
      assert.equal(await users.get('nobody'), null);
      assert.equal(await users.getValue('nobody'), null);
      const at = new Date(Date.now() + 3600000);
      assert.equal(await users.reprepare('alice', { userId: '42', name: 'Alice' }, { ifEq: { userId: '42', name: 'other' } }), false);
      assert.equal(await users.reprepare('alice', { userId: '42', name: 'Alice' }, { ifEq: alice, expiresAt: at }), true);
      assert.deepEqual(await users.getValue('alice'), { value: { userId: '42', name: 'Alice' }, expiresAt: at });
      assert.equal(await users.changeKey('alice', { userId: '42', name: 'Alice' }, 'alice2', alice), true);
      assert.equal(await users.get('alice'), null);
      assert.deepEqual(await users.get('alice2'), alice);
      assert.equal(await users.rollbackIfEq('alice2', { userId: '7', name: 'Eve' }), false);
      assert.equal(await users.rollbackIfEq('alice2', alice), true);
      assert.equal(await users.prepare('bob', { userId: '8', name: 'Bob' }, { ttlSeconds: 60 }), true);
      assert.equal(await users.rollback('bob'), true);
      assert.equal(await users.rollback('bob'), false);
      const result = await users.usingPrepare('carol', { userId: '9', name: 'Carol' }, async (prepared) => prepared);
      assert.equal(result, true);
      await assert.rejects(users.usingPrepare('dave', { userId: '10', name: 'Dave' }, async () => { throw new Error('body'); }), /body/);
      assert.equal(await users.getValue('dave'), null, 'rolled back with the encoded value');
    });

    test('IFEQ matches records holding Jackson\'s bytes, Doubles marked by the schema', async () => {
      const ns = unique('wow');
      // Records as Wow writes them.
      await pk.prepare(ns, 'price', expected('double fraction'));
      await pk.prepare(ns, 'whole', expected('double whole'));
      await pk.prepare(ns, 'order', expected('nested'));
      await pk.prepare(ns, 'escapes', expected('escapes'));
      const prices = pk.key(ns, { codec: jackson.codec({ amount: 'double', x: 'double' }) });
      assert.equal(await prices.rollbackIfEq('price', { sku: 'A-1', amount: 9.99 }), true);
      // 100 without the mark is an Int: "100", not Wow's "100.0".
      assert.equal(await pk.key(ns).rollbackIfEq('whole', { x: 100 }), false);
      assert.equal(await pk.key(ns).rollbackIfEq('whole', { x: jackson.double(100) }), true);
      // Read and written back with the same schema: the same bytes.
      const orders = pk.key(ns, { codec: jackson.codec({ total: 'double' }) });
      const order = await orders.get('order');
      assert.deepEqual(order, { id: 'o1', lines: [{ sku: 'a', qty: 2 }, { sku: 'b', qty: 1 }], total: 19.5 });
      assert.equal(await orders.reprepare('order', { ...order, total: 20 }, { ifEq: order }), true);
      assert.equal(await pk.get(ns, 'order'), '{"id":"o1","lines":[{"sku":"a","qty":2},{"sku":"b","qty":1}],"total":20.0}');
      const s = await pk.key(ns).get('escapes');
      assert.equal(await pk.key(ns).rollbackIfEq('escapes', s), true);
    });

    test('a codec of one\'s own: encode to a string or Buffer, decode a Buffer', async () => {
      const ns = unique('codec');
      const upper = { encode: (v) => v.toUpperCase(), decode: (b) => b.toString('utf8').toLowerCase() };
      const k = pk.key(ns, { codec: upper });
      assert.equal(await k.prepare('x', 'hello'), true);
      assert.equal(await pk.get(ns, 'x'), 'HELLO');
      assert.equal(await k.get('x'), 'hello');
      const bad = pk.key(ns, { codec: { encode: () => 5, decode: String } });
      await assert.rejects(bad.prepare('y', 'v'), { name: 'TypeError', message: 'value encoded by the codec must be a string or a Buffer, got type number' });
    });
  });
}
