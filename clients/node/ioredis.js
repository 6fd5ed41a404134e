// prepkey from Node.js with ioredis, in RESP3 (ioredis 6's default: HELLO 3)
// and RESP2.
//
// Run by clients/run.sh against a sidecar started with --requirepass; it
// reads PREPKEY_HOST, PREPKEY_PORT and PREPKEY_PASSWORD. Exits non-zero if
// any check fails.
'use strict';
const assert = require('node:assert');
const Redis = require('ioredis');

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

const once = { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null };

async function main() {
  // AUTH: a wrong password and no password are refused; ioredis reports
  // the reply in its 'error' event, and the command fails.
  for (const pass of ['wrong', undefined]) {
    const bad = new Redis({ host, port, password: pass, ...once });
    let reported = '';
    bad.on('error', (e) => { reported = e.message; });
    check(`refused (${pass})`, (await errorOf(bad.call('PK.GET', 'username', 'alice'))) !== null, true);
    check(`auth error (${pass})`, pass
      ? reported === 'WRONGPASS invalid username-password pair or user is disabled.'
      : reported.startsWith('NOAUTH HELLO must be called with the client already authenticated'), true);
    bad.disconnect();
  }
  for (const protocol of [3, 2]) {
    await run(new Redis({ host, port, password, protocol }), `username-ioredis${protocol}`);
  }
  console.log(`node (ioredis ${require('ioredis/package.json').version}): ${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

async function run(redis, ns) {
  // Sign-up: reserve the username before emitting the event.
  const user = '{"userId":"42"}';
  check('sign-up', await redis.call('PK.PREPARE', ns, 'alice', user, 'EX', 300), 1);
  check('taken', await redis.call('PK.PREPARE', ns, 'alice', '{"userId":"7"}'), 0);
  check('get', await redis.call('PK.GET', ns, 'alice'), user);
  // Username change: alice -> alice2 in one step.
  check('change', await redis.call('PK.REPREPARE', ns, 'alice2', user, 'FROM', 'alice', 'IFEQ', user), 1);
  check('old name free', await redis.call('PK.GET', ns, 'alice'), null);
  // Release.
  check('release', await redis.call('PK.ROLLBACK', ns, 'alice2', 'IFEQ', user), 1);

  // Binary keys and values, byte for byte (callBuffer answers Buffers).
  const key = Buffer.from([0, 255, 13, 10, 107]);
  const value = Buffer.from([...Array(256).keys()]);
  check('binary prepare', await redis.call('PK.PREPARE', ns, key, value), 1);
  check('binary get', (await redis.callBuffer('PK.GET', ns, key)).equals(value), true);

  // TTL: the reservation expires; PK.GETVALUE still shows it (retained).
  check('ttl prepare', await redis.call('PK.PREPARE', ns, 'ttl', 'v', 'PX', 200), 1);
  const deadline = Date.now() + 10000;
  while ((await redis.call('PK.GET', ns, 'ttl')) !== null && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
  }
  check('expired', await redis.call('PK.GET', ns, 'ttl'), null);
  const [valueAt, ttlAt] = await redis.call('PK.GETVALUE', ns, 'ttl');
  check('expired record retained', [valueAt, ttlAt <= Date.now()], ['v', true]);
  check('expired key reserved again', await redis.call('PK.PREPARE', ns, 'ttl', 'v2'), 1);

  // A pipeline of 100 commands, answered in order: [[err, reply], ...].
  const p = redis.pipeline();
  for (let i = 0; i < 100; i++) p.call('PK.PREPARE', ns, `p${i}`, `v${i}`);
  check('pipeline', await p.exec(), Array(100).fill([null, 1]));

  // A transaction: MULTI/EXEC.
  const tx = await redis.multi()
    .call('PK.PREPARE', ns, 'tx-user', 'v')
    .call('PK.PREPARE', ns, 'tx-email', 'v')
    .exec();
  check('transaction', tx, [[null, 1], [null, 1]]);
  const aborted = redis.multi()
    .call('PK.PREPARE', ns, 'tx-other', 'v')
    .call('PK.PREPARE', ns, 'tx-other2', 'v', 'EX') // refused: syntax
    .exec();
  check('execabort', await errorOf(aborted), 'EXECABORT Transaction discarded because of previous errors.');
  check('aborted block stored nothing', await redis.call('PK.GET', ns, 'tx-other'), null);

  // Errors: Redis's words, as ReplyError.
  check('syntax', await errorOf(redis.call('PK.PREPARE', ns, 'k', 'v', 'EX')), 'ERR syntax error');
  check('arity', await errorOf(redis.call('PK.GET', ns)), "ERR wrong number of arguments for 'pk.get' command");
  const mismatch = await errorOf(redis.call('PK.REPREPARE', ns, 'new', 'v', 'FROM', 'nobody', 'IFEQ', 'v'));
  check('mismatch', String(mismatch).startsWith('MISMATCH '), true);

  redis.disconnect();
}

main().catch((e) => {
  console.log('FAIL', e);
  process.exit(1);
});
