// No resend, abort or lost reply strands a reservation (issue 32 items 1-3),
// over ioredis and node-redis with their default settings, through a TCP
// proxy (./proxy.js) that holds or drops a reply at a chosen command: every
// point where usingPrepare and prepare await is reached on an event, never
// after a sleep.
'use strict';
const { describe, test, before, after, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const { once } = require('node:events');
const Redis = require('ioredis');
const { createClient } = require('redis');
const { Prepkey, PrepkeyError, UnavailableError, MismatchError, AbortedError, outcomeUnknown } = require('prepkey');
const { connect, wrap, unique, unavailablePort } = require('./helpers');
const { Proxy } = require('./proxy');

const host = process.env.PREPKEY_HOST || '127.0.0.1';
const port = Number(process.env.PREPKEY_PORT);
const password = process.env.PREPKEY_PASSWORD;
const backend = process.env.PREPKEY_BACKEND || 'unknown backend';

// open connects a client of library to port with that library's default
// settings (ioredis: autoResendUnfulfilledCommands, maxRetriesPerRequest 20,
// reconnecting; node-redis: reconnecting, offline queue) unless extra says
// otherwise; errors are left to the commands.
async function open(library, toPort, extra = {}) {
  if (library === 'ioredis') {
    const client = new Redis({ host, port: toPort, password, lazyConnect: true, ...extra });
    client.on('error', () => {});
    await client.connect();
    return { client, close: () => client.disconnect() };
  }
  const client = createClient({ socket: { host, port: toPort, ...extra }, password });
  client.on('error', () => {});
  await client.connect();
  return { client, close: () => client.destroy() };
}

// settle turns a promise into {value} or {error}, to assert on either.
function settle(promise) {
  return promise.then((value) => ({ value }), (error) => ({ error }));
}

// reach waits until the proxy holds (or dropped) gate's reply, failing if
// call (settled) ends first: the point to abort at was never reached.
function reach(gate, call) {
  return Promise.race([gate.held, call.then((r) => {
    throw new Error(`the call ended before the reply was held: ${'error' in r ? r.error : r.value}`);
  })]);
}

for (const library of ['ioredis', 'node-redis']) {
  describe(`${library} defaults through a proxy (${backend})`, () => {
    let direct; // straight to the sidecar: what the tests check with
    let pk;
    let proxy;
    let conn; // through the proxy
    let viaProxy;
    before(async () => {
      direct = await connect({ library, resp: 2 });
      pk = new Prepkey(direct.client);
      proxy = await Proxy.start(port, host);
      conn = await open(library, proxy.port);
      viaProxy = new Prepkey(conn.client);
    });
    afterEach(() => proxy.reset());
    after(async () => {
      await conn.close();
      await proxy.close();
      await direct.close();
    });

    // Item 2: the reply to PREPARE is lost with the connection. ioredis
    // resends it on the new connection (it answers 0: the key is held, by
    // us); node-redis rejects it (SocketClosedUnexpectedlyError). Either
    // way the record holds our value, so it is ours.
    test('a PREPARE whose reply is lost: prepared true, the body runs, our reservation kept', async () => {
      const ns = unique('resend');
      const accepted = proxy.accepted;
      const gate = proxy.drop('PK.PREPARE');
      const calls = [];
      const result = await viaProxy.usingPrepare(ns, 'alice', 'cmd-1', async (prepared) => {
        calls.push(prepared);
        return 'done';
      });
      await gate.held;
      assert.equal(proxy.accepted, accepted + 1, 'the client reconnected');
      assert.equal(result, 'done');
      assert.deepEqual(calls, [true]);
      assert.equal(await pk.get(ns, 'alice'), 'cmd-1');
    });

    test('a PREPARE whose reply is lost, the body fails: our reservation released', async () => {
      const ns = unique('resend');
      proxy.drop('PK.PREPARE');
      const bodyError = new Error('the event could not be sent');
      const calls = [];
      const { error } = await settle(viaProxy.usingPrepare(ns, 'alice', 'cmd-2', async (prepared) => {
        calls.push(prepared);
        throw bodyError;
      }));
      assert.equal(error, bodyError);
      assert.deepEqual(calls, [true]);
      assert.equal(await pk.getValue(ns, 'alice'), null, 'no key stays held');
    });

    test('a PREPARE whose reply is lost while another value holds the key: body(false), theirs kept', async () => {
      const ns = unique('resend');
      await pk.prepare(ns, 'alice', 'theirs');
      proxy.drop('PK.PREPARE');
      const calls = [];
      const { value, error } = await settle(viaProxy.usingPrepare(ns, 'alice', 'cmd-3', async (prepared) => {
        calls.push(prepared);
        return prepared;
      }));
      if (library === 'ioredis') {
        // Resent, answered 0, read: theirs.
        assert.equal(value, false);
        assert.deepEqual(calls, [false]);
      } else {
        // Rejected, read: theirs, so the PREPARE's own error.
        assert.ok(outcomeUnknown(error), `got ${error}`);
        assert.equal(error.constructor.name, 'SocketClosedUnexpectedlyError');
        assert.deepEqual(calls, []);
      }
      assert.deepEqual(await pk.getValue(ns, 'alice'), { value: 'theirs', expiresAt: null });
    });

    // Item 1: abort at every point usingPrepare and prepare await.
    test('abort before anything is sent: the reason, nothing sent', async () => {
      const recorder = wrap(conn.client);
      const reason = new Error('stop');
      const signal = AbortSignal.abort(reason);
      for (const call of [
        () => new Prepkey(recorder).usingPrepare('ns', 'k', 'v', () => assert.fail('body ran'), { signal }),
        () => new Prepkey(recorder).prepare('ns', 'k', 'v', { signal }),
        () => new Prepkey(recorder).key('ns').prepare('k', { v: 1 }, { signal }),
      ]) {
        assert.equal((await settle(call())).error, reason);
      }
      assert.deepEqual(recorder.sent, []);
    });

    for (const op of ['usingPrepare', 'prepare']) {
      const start = (ns, value, signal) => (op === 'prepare'
        ? viaProxy.prepare(ns, 'alice', value, { signal })
        : viaProxy.usingPrepare(ns, 'alice', value, () => assert.fail('body ran'), { signal }));

      test(`${op}: abort while the PREPARE's reply (1) is awaited: undone, the reason`, async () => {
        const ns = unique('abort');
        const gate = proxy.hold('PK.PREPARE');
        const controller = new AbortController();
        const call = settle(start(ns, 'mine', controller.signal));
        await reach(gate, call);
        assert.deepEqual(await pk.getValue(ns, 'alice'), { value: 'mine', expiresAt: null }, 'the PREPARE ran');
        controller.abort();
        gate.release();
        const { error } = await call;
        assert.equal(error, controller.signal.reason);
        assert.equal(error.name, 'AbortError');
        assert.equal(outcomeUnknown(error), false);
        assert.equal(await pk.getValue(ns, 'alice'), null, 'no key stays held');
      });

      test(`${op}: abort while the PREPARE's reply (0, another value) is awaited: theirs kept, the reason`, async () => {
        const ns = unique('abort');
        await pk.prepare(ns, 'alice', 'theirs');
        const gate = proxy.hold('PK.PREPARE');
        const controller = new AbortController();
        const call = settle(start(ns, 'mine', controller.signal));
        await reach(gate, call);
        controller.abort();
        gate.release();
        assert.equal((await call).error, controller.signal.reason);
        assert.deepEqual(await pk.getValue(ns, 'alice'), { value: 'theirs', expiresAt: null });
      });

      test(`${op}: abort, then the connection is lost before the reply: resolved, undone, the reason`, async () => {
        const ns = unique('abort');
        const gate = proxy.hold('PK.PREPARE');
        const controller = new AbortController();
        const call = settle(start(ns, 'mine', controller.signal));
        await reach(gate, call);
        controller.abort();
        gate.drop();
        assert.equal((await call).error, controller.signal.reason);
        assert.equal(await pk.getValue(ns, 'alice'), null, 'no key stays held');
      });
    }

    test('usingPrepare: abort while the read after a 0 is awaited, our value there: undone, the reason', async () => {
      const ns = unique('abort');
      // The record already holds our value: what a resent PREPARE finds.
      await pk.prepare(ns, 'alice', 'mine');
      const gate = proxy.hold('PK.GETVALUE');
      const controller = new AbortController();
      const call = settle(viaProxy.usingPrepare(ns, 'alice', 'mine', () => assert.fail('body ran'), { signal: controller.signal }));
      await reach(gate, call);
      controller.abort();
      gate.release();
      assert.equal((await call).error, controller.signal.reason);
      assert.equal(await pk.getValue(ns, 'alice'), null, 'no key stays held');
    });

    test('usingPrepare: abort while the body runs, the body rejects with it: rolled back, the reason', async () => {
      const ns = unique('abort');
      const controller = new AbortController();
      let bodyStarted;
      const started = new Promise((resolve) => { bodyStarted = resolve; });
      const call = settle(viaProxy.usingPrepare(ns, 'alice', 'mine', async (prepared) => {
        assert.equal(prepared, true);
        bodyStarted();
        await once(controller.signal, 'abort');
        controller.signal.throwIfAborted();
      }, { signal: controller.signal }));
      await reach({ held: started }, call);
      controller.abort();
      assert.equal((await call).error, controller.signal.reason);
      assert.equal(await pk.getValue(ns, 'alice'), null, 'no key stays held');
    });

    test('usingPrepare: abort while the rollback after a failed body is awaited: the rollback finishes, the body\'s error', async () => {
      const ns = unique('abort');
      const controller = new AbortController();
      const gate = proxy.hold('PK.ROLLBACK');
      const bodyError = new Error('the body failed');
      const call = settle(viaProxy.usingPrepare(ns, 'alice', 'mine', async () => { throw bodyError; }, { signal: controller.signal }));
      await reach(gate, call);
      controller.abort();
      gate.release();
      assert.equal((await call).error, bodyError);
      assert.equal(await pk.getValue(ns, 'alice'), null, 'no key stays held');
    });

    test('usingPrepare: aborted after the body succeeded: its result, the reservation stays with its work', async () => {
      const ns = unique('abort');
      const controller = new AbortController();
      const result = await viaProxy.usingPrepare(ns, 'alice', 'mine', async () => {
        controller.abort();
        return 'sent';
      }, { signal: controller.signal });
      assert.equal(result, 'sent');
      assert.equal(await pk.get(ns, 'alice'), 'mine');
    });

    test('prepare: abort while the read after a 0 is awaited, our value there: undone, the reason', async () => {
      const ns = unique('abort');
      await pk.prepare(ns, 'alice', 'mine');
      const prepareGate = proxy.hold('PK.PREPARE');
      const controller = new AbortController();
      const call = settle(viaProxy.prepare(ns, 'alice', 'mine', { signal: controller.signal }));
      await reach(prepareGate, call);
      controller.abort();
      const readGate = proxy.hold('PK.GETVALUE');
      prepareGate.release();
      await reach(readGate, call);
      readGate.release();
      assert.equal((await call).error, controller.signal.reason);
      assert.equal(await pk.getValue(ns, 'alice'), null, 'no key stays held');
    });

    test('abort, the connection lost for good: AbortedError (outcome unknown), the reason kept', async (t) => {
      const ns = unique('abort');
      const once_ = await open(library, proxy.port,
        library === 'ioredis' ? { retryStrategy: () => null } : { reconnectStrategy: false });
      t.after(() => once_.close());
      const gate = proxy.hold('PK.PREPARE');
      const controller = new AbortController();
      const reason = new Error('shutting down');
      const call = settle(new Prepkey(once_.client).usingPrepare(ns, 'alice', 'mine', () => assert.fail('body ran'), { signal: controller.signal }));
      await reach(gate, call);
      controller.abort(reason);
      gate.drop();
      const { error } = await call;
      assert.ok(error instanceof AbortedError, `got ${error}`);
      assert.ok(error instanceof PrepkeyError);
      assert.equal(error.name, 'AbortedError');
      assert.equal(error.code, 'ABORTED');
      assert.equal(error.command, 'PK.PREPARE');
      assert.equal(error.reason, reason);
      assert.ok(error.cause instanceof Error);
      assert.match(error.message, /^PK\.PREPARE was aborted after it was sent, and whether it reserved the key could not be checked: /);
      assert.equal(outcomeUnknown(error), true);
      // Indeed still held: the caller must check, as the error says.
      assert.equal(await pk.get(ns, 'alice'), 'mine');
    });
  });
}

// Item 3: outcomeUnknown over the errors each library really raises.
for (const library of ['ioredis', 'node-redis']) {
  describe(`outcomeUnknown, ${library} (${backend})`, () => {
    let proxy;
    before(async () => { proxy = await Proxy.start(port, host); });
    after(() => proxy.close());

    test('the sidecar\'s replies: -UNAVAILABLE yes; ERR and MISMATCH no', async () => {
      const down = await open(library, unavailablePort);
      const direct = await open(library, port);
      try {
        const unavailable = await settle(new Prepkey(down.client).prepare('ns', 'k', 'v'));
        assert.ok(unavailable.error instanceof UnavailableError);
        assert.equal(outcomeUnknown(unavailable.error), true);
        // The library's own error for the same reply, not translated.
        const raw = await settle(library === 'ioredis'
          ? down.client.call('PK.GET', 'ns', 'k') : down.client.sendCommand(['PK.GET', 'ns', 'k']));
        assert.match(raw.error.message, /^UNAVAILABLE /);
        assert.equal(outcomeUnknown(raw.error), true);
        const pk = new Prepkey(direct.client);
        const syntax = await settle(pk.prepare('ns', 'k', 'v', { expiresAt: new Date(Date.now() - 60000) }));
        assert.equal(syntax.error.code, 'ERR');
        assert.equal(outcomeUnknown(syntax.error), false);
        const mismatch = await settle(pk.changeKey(unique('ns'), 'a', 'v', 'b', 'v'));
        assert.ok(mismatch.error instanceof MismatchError);
        assert.equal(outcomeUnknown(mismatch.error), false);
      } finally {
        await down.close();
        await direct.close();
      }
    });

    test('a connection lost while the reply is awaited: yes', async (t) => {
      const conn = await open(library, proxy.port,
        library === 'ioredis' ? { retryStrategy: () => null } : {});
      t.after(() => conn.close());
      const gate = proxy.drop('PK.GET');
      const { error } = await settle(new Prepkey(conn.client).get('ns', 'k'));
      await gate.held;
      assert.equal(error.message, library === 'ioredis' ? 'Connection is closed.' : 'Socket closed unexpectedly');
      assert.equal(outcomeUnknown(error), true);
    });

    test('a timeout while the reply is awaited: yes', async (t) => {
      // The reply is held until after the timeout fired: no race. (node-redis
      // times an idle socket from the connect: 1 s leaves room for the
      // command to be sent first on a busy machine.)
      // (node-redis: socketTimeout, no data for that long while a reply is
      // awaited; its per-command timeout only covers the wait to be written.)
      const conn = await open(library, proxy.port,
        library === 'ioredis' ? { commandTimeout: 200 } : { socketTimeout: 1000, reconnectStrategy: false });
      t.after(() => conn.close());
      const gate = proxy.hold('PK.GET');
      const { error } = await settle(new Prepkey(conn.client).get('ns', 'k'));
      await gate.held;
      gate.release();
      assert.equal(error.message, library === 'ioredis' ? 'Command timed out'
        : "Socket timeout timeout. Expecting data, but didn't receive any in 1000ms.");
      assert.equal(outcomeUnknown(error), true);
    });

    test('nothing sent: a refused connection, a closed client: no (ioredis says "Connection is closed." for both: yes)', async () => {
      // A port nobody listens on: the proxy's, after it is closed.
      const closed = await Proxy.start(port, host);
      const refusedPort = closed.port;
      await closed.close();
      if (library === 'ioredis') {
        const client = new Redis({ host, port: refusedPort, lazyConnect: true, retryStrategy: () => null });
        client.on('error', () => {});
        const { error } = await settle(new Prepkey(client).get('ns', 'k'));
        // ioredis reports a refused connection as a lost one: the same
        // "maybe", and a read tells.
        assert.equal(error.message, 'Connection is closed.');
        assert.equal(outcomeUnknown(error), true);
        return;
      }
      const client = createClient({ socket: { host, port: refusedPort, reconnectStrategy: false } });
      client.on('error', () => {});
      const refused = await settle(client.connect());
      assert.equal(refused.error.code, 'ECONNREFUSED');
      assert.equal(outcomeUnknown(refused.error), false);
      const { error } = await settle(new Prepkey(client).get('ns', 'k'));
      assert.equal(error.constructor.name, 'ClientClosedError');
      assert.equal(outcomeUnknown(error), false);
      const offline = createClient({ socket: { host, port: refusedPort }, disableOfflineQueue: true });
      const notOpen = await settle(new Prepkey(offline).get('ns', 'k'));
      assert.equal(outcomeUnknown(notOpen.error), false);
    });
  });
}

test('outcomeUnknown on errors of no library', () => {
  const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
  const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
  assert.equal(outcomeUnknown(reset), true);
  assert.equal(outcomeUnknown(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' })), true);
  assert.equal(outcomeUnknown(refused), false);
  assert.equal(outcomeUnknown(new UnavailableError('UNAVAILABLE backend', { code: 'UNAVAILABLE' })), true);
  assert.equal(outcomeUnknown(new AbortedError('x', {})), true);
  assert.equal(outcomeUnknown(AbortSignal.abort().reason), false);
  assert.equal(outcomeUnknown(new TypeError('name must be a string')), false);
  assert.equal(outcomeUnknown(new Error('something else')), false);
  assert.equal(outcomeUnknown('Connection is closed.'), false);
  assert.equal(outcomeUnknown(undefined), false);
});
