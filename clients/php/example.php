<?php
// prepkey from PHP with phpredis (Debian's php-redis).
//
// Run by clients/run.sh against a sidecar started with --requirepass; it
// reads PREPKEY_HOST, PREPKEY_PORT and PREPKEY_PASSWORD. Exits non-zero if
// any check fails.

$host = getenv('PREPKEY_HOST') ?: '127.0.0.1';
$port = (int)(getenv('PREPKEY_PORT') ?: 6380);
$password = getenv('PREPKEY_PASSWORD');
$ns = 'username-php'; // each client of the suite has its own namespace

$passed = 0;
$failed = 0;
function check($what, $got, $want) {
    global $passed, $failed;
    if ($got === $want) {
        $passed++;
    } else {
        $failed++;
        echo "FAIL $what: got ", var_export($got, true), ", want ", var_export($want, true), "\n";
    }
}

function pk(Redis $r, ...$args) {
    return $r->rawCommand(...$args);
}
// phpredis answers an -ERR reply with false and keeps its text in
// getLastError(); other errors (-MISMATCH, -UNAVAILABLE, -NOAUTH, ...)
// throw RedisException.
function errorOf(Redis $r, ...$args) {
    $r->clearLastError();
    try {
        $got = $r->rawCommand(...$args);
    } catch (RedisException $e) {
        return $e->getMessage();
    }
    return $got === false ? lastError($r) : null;
}
// lastError trims the NUL byte phpredis 5.3 leaves after some errors.
function lastError(Redis $r) {
    return rtrim((string)$r->getLastError(), "\0 ");
}

// AUTH: a wrong password and no password are refused.
$bad = new Redis();
$bad->connect($host, $port);
try {
    $bad->auth('wrong');
    check('wrong password', lastError($bad), 'WRONGPASS invalid username-password pair or user is disabled.');
} catch (RedisException $e) {
    check('wrong password', $e->getMessage(), 'WRONGPASS invalid username-password pair or user is disabled.');
}
try {
    check('no password', errorOf($bad, 'PK.GET', $ns, 'alice'), 'NOAUTH Authentication required.');
} catch (RedisException $e) {
    check('no password', $e->getMessage(), 'NOAUTH Authentication required.');
}

$r = new Redis();
$r->connect($host, $port);
check('auth', $r->auth($password), true);

// Sign-up: reserve the username before emitting the event.
$user = '{"userId":"42"}';
check('sign-up', pk($r, 'PK.PREPARE', $ns, 'alice', $user, 'EX', 300), 1);
check('taken', pk($r, 'PK.PREPARE', $ns, 'alice', '{"userId":"7"}'), 0);
check('get', pk($r, 'PK.GET', $ns, 'alice'), $user);
// Username change: alice -> alice2 in one step.
check('change', pk($r, 'PK.REPREPARE', $ns, 'alice2', $user, 'FROM', 'alice', 'IFEQ', $user), 1);
check('old name free', pk($r, 'PK.GET', $ns, 'alice'), false); // phpredis: nil is false
// Release.
check('release', pk($r, 'PK.ROLLBACK', $ns, 'alice2', 'IFEQ', $user), 1);

// Binary keys and values, byte for byte.
$key = "\x00\xff\r\nk";
$value = implode('', array_map('chr', range(0, 255)));
check('binary prepare', pk($r, 'PK.PREPARE', $ns, $key, $value), 1);
check('binary get', pk($r, 'PK.GET', $ns, $key), $value);

// TTL: the reservation expires; PK.GETVALUE still shows it (retained).
check('ttl prepare', pk($r, 'PK.PREPARE', $ns, 'ttl', 'v', 'PX', 200), 1);
$deadline = microtime(true) + 10;
while (pk($r, 'PK.GET', $ns, 'ttl') !== false && microtime(true) < $deadline) {
    usleep(50000);
}
check('expired', pk($r, 'PK.GET', $ns, 'ttl'), false);
[$valueAt, $ttlAt] = pk($r, 'PK.GETVALUE', $ns, 'ttl');
check('expired record retained', [$valueAt, $ttlAt <= microtime(true) * 1000], ['v', true]);
check('expired key reserved again', pk($r, 'PK.PREPARE', $ns, 'ttl', 'v2'), 1);

// A pipeline of 100 commands, answered in order.
$p = $r->multi(Redis::PIPELINE);
for ($i = 0; $i < 100; $i++) {
    $p->rawCommand('PK.PREPARE', $ns, "p$i", "v$i");
}
check('pipeline', $p->exec(), array_fill(0, 100, 1));

// A transaction: MULTI/EXEC.
$tx = $r->multi();
$tx->rawCommand('PK.PREPARE', $ns, 'tx-user', 'v');
$tx->rawCommand('PK.PREPARE', $ns, 'tx-email', 'v');
check('transaction', $tx->exec(), [1, 1]);
// A block with a refused command: EXEC answers -EXECABORT. phpredis 5.3
// then waits for an array until its read timeout (with Redis too), throws,
// and drops the connection: use a connection of its own, with a short read
// timeout.
$aborting = new Redis();
$aborting->connect($host, $port, 0, null, 0, 1.0);
$aborting->auth($password);
$tx = $aborting->multi();
$tx->rawCommand('PK.PREPARE', $ns, 'tx-other', 'v');
$tx->rawCommand('PK.PREPARE', $ns, 'tx-other2', 'v', 'EX'); // refused: syntax
try {
    $tx->exec();
    check('a block with a refused command aborts', true, false);
} catch (RedisException $e) {
    check('execabort', lastError($aborting), 'ERR syntax error');
}
check('aborted block stored nothing', pk($r, 'PK.GET', $ns, 'tx-other'), false);

// Errors: Redis's words, from getLastError().
check('syntax', errorOf($r, 'PK.PREPARE', $ns, 'k', 'v', 'EX'), 'ERR syntax error');
check('arity', errorOf($r, 'PK.GET', $ns), "ERR wrong number of arguments for 'pk.get' command");
$mismatch = errorOf($r, 'PK.REPREPARE', $ns, 'new', 'v', 'FROM', 'nobody', 'IFEQ', 'v');
check('mismatch', str_starts_with((string)$mismatch, 'MISMATCH '), true);

echo 'php (phpredis ', phpversion('redis'), "): $passed passed, $failed failed\n";
exit($failed ? 1 : 0);
