// prepkey from Node.js with node-redis (the `redis` package), in RESP3 and
// RESP2.
//
// Run by clients/run.sh against a sidecar started with --requirepass; it
// reads PREPKEY_HOST, PREPKEY_PORT and PREPKEY_PASSWORD. Exits non-zero if
// any check fails.
'use strict';
const assert = require('node:assert');
const { createClient, RESP_TYPES } = require('redis');

const host = process.env.PREPKEY_HOST || '127.0.0.1';
const port = Number(process.env.PREPKEY_PORT || 6380);
const password = process.env.PREPKEY_PASSWORD;

let passed = 0;
let failed = 0;
function check(what, got, want) {
  try {
    assert.deepStrictEqual(got, want);
    passed++;
  } catch {
    failed++;
    console.log(`FAIL ${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
}

// errorOf is the reply error a call rejects with, or null.
async function errorOf(promise) {
  try {
    await promise;
    return null;
  } catch (e) {
    return e.message;
  }
}

function client(options) {
  return createClient({ socket: { host, port, reconnectStrategy: false }, ...options })
    .on('error', () => {}); // connection errors are checked where they matter
}

async function main() {
  // AUTH: a wrong password is refused at connect.
  check('wrong password', await errorOf(client({ password: 'wrong' }).connect()),
    'WRONGPASS invalid username-password pair or user is disabled.');
  const anon = await client({ RESP: 2 }).connect();
  check('no password', await errorOf(anon.sendCommand(['PK.GET', 'username', 'alice'])), 'NOAUTH Authentication required.');
  anon.destroy();

  for (const RESP of [3, 2]) {
    const redis = await client({ password, RESP }).connect();
    await run(redis, `username-node-redis${RESP}`);
    redis.destroy();
  }
  console.log(`node (node-redis ${require('redis/package.json').version}): ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

async function run(redis, ns) {
  const pk = (...args) => redis.sendCommand(args);

  // Sign-up: reserve the username before emitting the event.
  const user = '{"userId":"42"}';
  check('sign-up', await pk('PK.PREPARE', ns, 'alice', user, 'EX', '300'), 1);
  check('taken', await pk('PK.PREPARE', ns, 'alice', '{"userId":"7"}'), 0);
  check('get', await pk('PK.GET', ns, 'alice'), user);
  // Username change: alice -> alice2 in one step.
  check('change', await pk('PK.REPREPARE', ns, 'alice2', user, 'FROM', 'alice', 'IFEQ', user), 1);
  check('old name free', await pk('PK.GET', ns, 'alice'), null);
  // Release.
  check('release', await pk('PK.ROLLBACK', ns, 'alice2', 'IFEQ', user), 1);

  // Binary keys and values, byte for byte: bulk strings mapped to Buffers.
  const key = Buffer.from([0, 255, 13, 10, 107]);
  const value = Buffer.from([...Array(256).keys()]);
  check('binary prepare', await pk('PK.PREPARE', ns, key, value), 1);
  const binary = redis.withTypeMapping({ [RESP_TYPES.BLOB_STRING]: Buffer });
  check('binary get', (await binary.sendCommand(['PK.GET', ns, key])).equals(value), true);

  // TTL: the reservation expires; PK.GETVALUE still shows it (retained).
  check('ttl prepare', await pk('PK.PREPARE', ns, 'ttl', 'v', 'PX', '200'), 1);
  const deadline = Date.now() + 10000;
  while ((await pk('PK.GET', ns, 'ttl')) !== null && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  check('expired', await pk('PK.GET', ns, 'ttl'), null);
  const [valueAt, ttlAt] = await pk('PK.GETVALUE', ns, 'ttl');
  check('expired record retained', [valueAt, ttlAt <= Date.now()], ['v', true]);
  check('expired key reserved again', await pk('PK.PREPARE', ns, 'ttl', 'v2'), 1);

  // A pipeline of 100 commands, answered in order.
  const p = redis.multi();
  for (let i = 0; i < 100; i++) p.addCommand(['PK.PREPARE', ns, `p${i}`, `v${i}`]);
  check('pipeline', await p.execAsPipeline(), Array(100).fill(1));

  // A transaction: MULTI/EXEC.
  const tx = await redis.multi()
    .addCommand(['PK.PREPARE', ns, 'tx-user', 'v'])
    .addCommand(['PK.PREPARE', ns, 'tx-email', 'v'])
    .exec();
  check('transaction', tx, [1, 1]);
  const aborted = redis.multi()
    .addCommand(['PK.PREPARE', ns, 'tx-other', 'v'])
    .addCommand(['PK.PREPARE', ns, 'tx-other2', 'v', 'EX']) // refused: syntax
    .exec();
  // node-redis rejects with the refused command's error; EXEC answered EXECABORT
  check('execabort', await errorOf(aborted), 'ERR syntax error');
  check('aborted block stored nothing', await pk('PK.GET', ns, 'tx-other'), null);

  // Errors: Redis's words, as ErrorReply.
  check('syntax', await errorOf(pk('PK.PREPARE', ns, 'k', 'v', 'EX')), 'ERR syntax error');
  check('arity', await errorOf(pk('PK.GET', ns)), "ERR wrong number of arguments for 'pk.get' command");
  const mismatch = await errorOf(pk('PK.REPREPARE', ns, 'new', 'v', 'FROM', 'nobody', 'IFEQ', 'v'));
  check('mismatch', String(mismatch).startsWith('MISMATCH '), true);
}

main().catch((e) => {
  console.log('FAIL', e);
  process.exit(1);
});
