// usingPrepare, case by case as clients/clients.md (issue 22) defines it,
// against the real sidecars; the rollback failure of case 4 is injected at
// the client (PK.ROLLBACK routed to the unavailable sidecar, or failed with a
// transport error), since a sidecar cannot be made to fail between two
// commands on demand.
'use strict';
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { Prepkey, PrepkeyError, UnavailableError } = require('prepkey');
const { configs, connect, wrap, unique, unavailablePort } = require('./helpers');

for (const config of configs) {
  describe(config.label, () => {
    let conn;
    let down;
    let pk;
    before(async () => {
      conn = await connect(config);
      down = await connect(config, unavailablePort);
      pk = new Prepkey(conn.client);
    });
    after(async () => {
      await conn.close();
      await down.close();
    });

    test('1. prepare false: body(false), its result, nothing rolled back', async () => {
      const ns = unique('using');
      await pk.prepare(ns, 'alice', 'theirs');
      const recorder = wrap(conn.client);
      const calls = [];
      const result = await new Prepkey(recorder).usingPrepare(ns, 'alice', 'mine', async (prepared) => {
        calls.push(prepared);
        return 'body result';
      });
      assert.equal(result, 'body result');
      assert.deepEqual(calls, [false]);
      // After the 0 the record is read: another value, so not ours.
      assert.deepEqual(recorder.sent, [['PK.PREPARE', ns, 'alice', 'mine'], ['PK.GETVALUE', ns, 'alice']]);
      assert.deepEqual(await pk.getValue(ns, 'alice'), { value: 'theirs', expiresAt: null });
    });

    test('1. prepare false, body fails: its error as is, nothing rolled back', async () => {
      const ns = unique('using');
      await pk.prepare(ns, 'alice', 'theirs');
      const recorder = wrap(conn.client);
      const bodyError = new Error('taken, and the body failed');
      const err = await new Prepkey(recorder).usingPrepare(ns, 'alice', 'mine', async (prepared) => {
        assert.equal(prepared, false);
        throw bodyError;
      }).then(() => null, (e) => e);
      assert.equal(err, bodyError);
      // After the 0 the record is read: another value, so not ours.
      assert.deepEqual(recorder.sent, [['PK.PREPARE', ns, 'alice', 'mine'], ['PK.GETVALUE', ns, 'alice']]);
      assert.deepEqual(await pk.getValue(ns, 'alice'), { value: 'theirs', expiresAt: null });
    });

    test('1. prepare false, the record holds our own value (a resent PREPARE): ours, body(true)', async () => {
      const ns = unique('using');
      // What a PREPARE that ran, lost its reply and was resent finds.
      await pk.prepare(ns, 'alice', 'cmd-1');
      const recorder = wrap(conn.client);
      const calls = [];
      const bodyError = new Error('the body failed');
      const err = await new Prepkey(recorder).usingPrepare(ns, 'alice', 'cmd-1', async (prepared) => {
        calls.push(prepared);
        throw bodyError;
      }).then(() => null, (e) => e);
      assert.equal(err, bodyError);
      assert.deepEqual(calls, [true]);
      assert.deepEqual(recorder.sent, [
        ['PK.PREPARE', ns, 'alice', 'cmd-1'],
        ['PK.GETVALUE', ns, 'alice'],
        ['PK.ROLLBACK', ns, 'alice', 'IFEQ', 'cmd-1'],
      ]);
      assert.equal(await pk.getValue(ns, 'alice'), null, 'ours, so released');
    });

    test('1. prepare false, the read fails: that error, the body not run', async () => {
      const ns = unique('using');
      await pk.prepare(ns, 'alice', 'theirs');
      const routed = wrap(conn.client, (args, forward) =>
        args[0] === 'PK.GETVALUE' ? forward(args, down.client) : forward(args));
      let ran = 0;
      const err = await new Prepkey(routed).usingPrepare(ns, 'alice', 'mine', async () => { ran++; }).then(() => null, (e) => e);
      assert.ok(err instanceof UnavailableError, `got ${err}`);
      assert.equal(err.command, 'PK.GETVALUE');
      assert.equal(ran, 0);
      assert.deepEqual(await pk.getValue(ns, 'alice'), { value: 'theirs', expiresAt: null });
    });

    test('2. prepare true, body succeeds: its result, nothing rolled back', async () => {
      const ns = unique('using');
      const recorder = wrap(conn.client);
      const calls = [];
      const at = new Date(Date.now() + 3600000);
      const result = await new Prepkey(recorder).usingPrepare(ns, 'alice', 'mine', async (prepared) => {
        calls.push(prepared);
        // The reservation exists while the body runs.
        assert.equal(await pk.get(ns, 'alice'), 'mine');
        return { event: 'sent' };
      }, { ttl: at });
      assert.deepEqual(result, { event: 'sent' });
      assert.deepEqual(calls, [true]);
      assert.deepEqual(recorder.sent, [['PK.PREPARE', ns, 'alice', 'mine', 'PXAT', String(at.getTime())]]);
      assert.deepEqual(await pk.getValue(ns, 'alice'), { value: 'mine', expiresAt: at });
    });

    test('2. a synchronous body works the same', async () => {
      const ns = unique('using');
      assert.equal(await pk.usingPrepare(ns, 'alice', 'mine', (prepared) => `sync ${prepared}`), 'sync true');
      assert.equal(await pk.get(ns, 'alice'), 'mine');
    });

    test('3. prepare true, body fails: ROLLBACK IFEQ value, then the body\'s error', async () => {
      const ns = unique('using');
      const recorder = wrap(conn.client);
      const bodyError = new TypeError('the event could not be sent');
      const err = await new Prepkey(recorder).usingPrepare(ns, 'alice', 'mine', async (prepared) => {
        assert.equal(prepared, true);
        throw bodyError;
      }).then(() => null, (e) => e);
      assert.equal(err, bodyError);
      assert.deepEqual(recorder.sent, [
        ['PK.PREPARE', ns, 'alice', 'mine'],
        ['PK.ROLLBACK', ns, 'alice', 'IFEQ', 'mine'],
      ]);
      assert.equal(await pk.getValue(ns, 'alice'), null);
    });

    test('3. the rollback answering false (value changed meanwhile) is not an error: the body\'s error, the other value kept', async () => {
      const ns = unique('using');
      const bodyError = new Error('failed after someone else took over');
      const err = await pk.usingPrepare(ns, 'alice', 'mine', async () => {
        assert.equal(await pk.reprepare(ns, 'alice', 'theirs', { ifEq: 'mine' }), true);
        throw bodyError;
      }).then(() => null, (e) => e);
      assert.equal(err, bodyError);
      assert.deepEqual(await pk.getValue(ns, 'alice'), { value: 'theirs', expiresAt: null });
    });

    test('3. a body throwing a non-Error: that value, after the rollback', async () => {
      const ns = unique('using');
      const err = await pk.usingPrepare(ns, 'alice', 'mine', () => { throw 'plain string'; }).then(() => null, (e) => e);
      assert.equal(err, 'plain string');
      assert.equal(await pk.getValue(ns, 'alice'), null);
    });

    test('4. the rollback fails with -UNAVAILABLE: that UnavailableError, cause the body\'s error', async () => {
      const ns = unique('using');
      // PK.ROLLBACK goes to the sidecar whose backend is down: a real
      // -UNAVAILABLE reply, through the library's own error path.
      const routed = wrap(conn.client, (args, forward) =>
        args[0] === 'PK.ROLLBACK' ? forward(args, down.client) : forward(args));
      const bodyError = new Error('the body failed');
      const err = await new Prepkey(routed).usingPrepare(ns, 'alice', 'mine', async () => {
        throw bodyError;
      }).then(() => null, (e) => e);
      assert.ok(err instanceof UnavailableError, `got ${err}`);
      assert.ok(err instanceof PrepkeyError);
      assert.equal(err.code, 'UNAVAILABLE');
      assert.equal(err.command, 'PK.ROLLBACK');
      assert.match(err.message, /^UNAVAILABLE /);
      assert.equal(err.cause, bodyError);
      assert.deepEqual(routed.sent.map((args) => args[0]), ['PK.PREPARE', 'PK.ROLLBACK']);
      // The reservation is still there: the caller learns so from the type.
      assert.deepEqual(await pk.getValue(ns, 'alice'), { value: 'mine', expiresAt: null });
    });

    test('4. the rollback fails with a transport error: that error, cause the body\'s error', async () => {
      const ns = unique('using');
      const transportError = new Error('Connection is closed.');
      const failing = wrap(conn.client, (args, forward) =>
        args[0] === 'PK.ROLLBACK' ? Promise.reject(transportError) : forward(args));
      const bodyError = new Error('the body failed');
      const err = await new Prepkey(failing).usingPrepare(ns, 'alice', 'mine', async () => {
        throw bodyError;
      }).then(() => null, (e) => e);
      assert.equal(err, transportError, 'passed through as the library raised it');
      assert.equal(err.cause, bodyError);
      assert.deepEqual(failing.sent, [
        ['PK.PREPARE', ns, 'alice', 'mine'],
        ['PK.ROLLBACK', ns, 'alice', 'IFEQ', 'mine'],
      ]);
    });

    test('4. a rollback error that has a cause of its own is wrapped, keeping both', async () => {
      const ns = unique('using');
      const rootCause = new Error('ECONNRESET');
      const transportError = new Error('socket closed', { cause: rootCause });
      const failing = wrap(conn.client, (args, forward) =>
        args[0] === 'PK.ROLLBACK' ? Promise.reject(transportError) : forward(args));
      const bodyError = new Error('the body failed');
      const err = await new Prepkey(failing).usingPrepare(ns, 'alice', 'mine', async () => {
        throw bodyError;
      }).then(() => null, (e) => e);
      assert.ok(err instanceof PrepkeyError);
      assert.equal(err.message, 'PK.ROLLBACK failed after the body failed: socket closed');
      assert.equal(err.cause, bodyError);
      assert.equal(err.rollbackError, transportError);
      assert.equal(transportError.cause, rootCause);
    });

    test('5. -UNAVAILABLE on prepare: UnavailableError, the body not run', async () => {
      const ns = unique('using');
      const recorder = wrap(down.client);
      let ran = 0;
      const err = await new Prepkey(recorder).usingPrepare(ns, 'alice', 'mine', async () => {
        ran++;
      }).then(() => null, (e) => e);
      assert.ok(err instanceof UnavailableError, `got ${err}`);
      assert.equal(err.command, 'PK.PREPARE');
      assert.equal(err.cause, undefined);
      assert.equal(ran, 0);
      // The outcome is unknown, so the record is read; that fails too: the
      // PREPARE's error, as the caller must still find out.
      assert.deepEqual(recorder.sent, [['PK.PREPARE', ns, 'alice', 'mine'], ['PK.GETVALUE', ns, 'alice']]);
    });
  });
}
