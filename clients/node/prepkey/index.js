// prepkey: a typed helper for the PK commands of the prepkey sidecar, over
// the Redis client an application already has (ioredis or node-redis).
//
// Every operation is one PK command sent through the client's generic call
// (ioredis `callBuffer`, node-redis `sendCommand`), so the client's own
// connection handling, RESP2/RESP3 choice, pipelining and auth stay as the
// application configured them. Replies are read as Buffers so that keys and
// values round-trip byte for byte whatever the client's decoding settings.
'use strict';
const jackson = require('./jackson');

// What the sidecar accepts as a namespace (docs/protocol.md, Words). Checked
// here because it is fixed; key and value size limits are sidecar flags, so
// those are left to the sidecar to answer.
const NAMESPACE = /^[A-Za-z0-9_.-]{1,64}$/;

// PK.MPREPARE takes 1 to 64 (name, key, value) triples; PK.SCAN's COUNT is
// 1 to 1000. Both fixed by the protocol.
const MAX_MPREPARE_ENTRIES = 64;
const MAX_SCAN_COUNT = 1000;

// node-redis type-mapping codes (RESP_TYPES.BLOB_STRING and NUMBER), written
// out so that this package does not load either library itself.
const RESP_BLOB_STRING = 36;
const RESP_NUMBER = 58;

/** The base of every error this package raises for a sidecar reply. */
class PrepkeyError extends Error {
  /**
   * @param {string} message the sidecar's error text (e.g. "ERR syntax error")
   * @param {{code?: string, command?: string, cause?: unknown}} [details]
   */
  constructor(message, details = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    // code is the reply's first word (ERR, UNAVAILABLE, MISMATCH, NOAUTH...),
    // the part of a Redis error meant for programs.
    this.code = details.code;
    this.command = details.command;
  }
}

/**
 * The sidecar answered -UNAVAILABLE: its backend failed or did not answer in
 * time. The command may or may not have taken effect. Never read it as
 * "false": check with getValue (the record and its value tell whether this
 * command's reservation exists) before retrying.
 */
class UnavailableError extends PrepkeyError {}

/**
 * The sidecar answered -MISMATCH to changeKey: the old key has no record, or
 * its value is not the one given. Nothing changed; the new key is not left
 * reserved.
 */
class MismatchError extends PrepkeyError {}

/**
 * A prepare was aborted (options.signal) after PK.PREPARE was sent, and the
 * helper could not find out whether it reserved the key, or could not undo
 * it: `cause` is the error of that check or rollback, `reason` the signal's
 * reason. The reservation may exist (outcomeUnknown is true): check with
 * getValue. When the check succeeds the signal's reason is raised instead.
 */
class AbortedError extends PrepkeyError {
  constructor(message, details = {}) {
    super(message, { code: 'ABORTED', command: details.command, cause: details.cause });
    this.reason = details.reason;
  }
}

// Each class names itself (err.name, and what util.inspect prints), as
// Node's own errors do, on the prototype where it can still be overridden.
for (const type of [PrepkeyError, UnavailableError, MismatchError, AbortedError]) {
  Object.defineProperty(type.prototype, 'name', { value: type.name, writable: true, configurable: true });
}

// isReplyError tells a reply of the server from a transport failure, by the
// classes the two libraries use: ioredis's ReplyError (from redis-errors,
// name "ReplyError") and node-redis's ErrorReply (its subclasses keep the
// default name "Error", so the prototype chain is looked at).
function isReplyError(err) {
  if (!(err instanceof Error)) return false;
  if (err.name === 'ReplyError') return true;
  for (let proto = Object.getPrototypeOf(err); proto; proto = Object.getPrototypeOf(proto)) {
    if (proto.constructor && proto.constructor.name === 'ErrorReply') return true;
  }
  return false;
}

// Class names (anywhere in the prototype chain) of the errors after which a
// command may or may not have run: node-redis's socket closed or timed out
// while commands waited for their replies (SocketClosedUnexpectedlyError,
// SocketTimeoutError, TimeoutError and its maintenance subclasses, a
// ReconnectStrategyError wrapping one of those), ioredis's
// MaxRetriesPerRequestError (a command sent, the connection lost, resends
// exhausted). ConnectionTimeoutError is node-redis failing to connect, but a
// command queued before a reconnect may have been sent on the connection
// that was lost, so it counts too.
const UNKNOWN_CLASSES = new Set([
  'SocketClosedUnexpectedlyError', 'SocketTimeoutError', 'ConnectionTimeoutError', 'TimeoutError',
  'SocketTimeoutDuringMaintenanceError', 'CommandTimeoutDuringMaintenanceError', 'MaxRetriesPerRequestError',
]);

// ioredis raises plain Errors with these messages: every pending command
// when the connection closes for good, and a command past commandTimeout.
const UNKNOWN_MESSAGES = new Set(['Connection is closed.', 'Command timed out']);

// Node's socket error codes when an open connection broke: bytes may have
// been written. ECONNREFUSED (and a DNS failure) is not here: no connection
// was made, so nothing was sent (see outcomeUnknown).
const UNKNOWN_CODES = new Set(['ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED']);

function classNames(err) {
  const names = [];
  for (let proto = Object.getPrototypeOf(err); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    if (proto.constructor) names.push(proto.constructor.name);
  }
  return names;
}

/**
 * outcomeUnknown(err) is true when err leaves open whether the command took
 * effect, so that the caller must read the record (getValue) before
 * deciding: the sidecar's -UNAVAILABLE (its backend failed or timed out),
 * a connection that closed or reset while the reply was awaited, a timeout,
 * an AbortedError (aborted after sending, not resolved). False for replies
 * that say the command did not run (ERR …, MISMATCH, NOAUTH), argument
 * errors, a client that was closed or offline before the command was sent
 * (node-redis ClientClosedError, ClientOfflineError, AbortError), a signal's
 * own reason, and a refused connection (ECONNREFUSED: no connection
 * existed, so nothing of the command left the process; retrying is safe).
 * Errors it does not know are false: it answers for the errors of ioredis,
 * node-redis, Node's sockets and this package.
 */
function outcomeUnknown(err) {
  if (!(err instanceof Error)) return false;
  if (err instanceof UnavailableError || err instanceof AbortedError) return true;
  if (isReplyError(err)) return /^UNAVAILABLE( |$)/.test(err.message);
  const names = classNames(err);
  if (names.some((name) => UNKNOWN_CLASSES.has(name))) return true;
  if (names.includes('ReconnectStrategyError')) return outcomeUnknown(err.originalError ?? err.socketError);
  if (UNKNOWN_CODES.has(err.code)) return true;
  return names.at(-1) === 'Error' && names.length === 1 && UNKNOWN_MESSAGES.has(err.message);
}

// translate turns a reply error into this package's types and passes any
// other error (a closed connection, a timeout) through as the library raised
// it: its outcome is as unknown as -UNAVAILABLE's.
function translate(err, command) {
  if (!isReplyError(err)) return err;
  const message = err.message;
  const code = message.split(' ', 1)[0];
  const details = { code, command };
  if (code === 'UNAVAILABLE') return new UnavailableError(message, details);
  if (code === 'MISMATCH') return new MismatchError(message, details);
  return new PrepkeyError(message, details);
}

// senderFor returns send(args) -> Promise<reply with bulk strings as
// Buffers> for an ioredis client (Redis) or a node-redis client
// (createClient, createClientPool). ioredis is checked first: it also has a
// sendCommand method, with another meaning.
function senderFor(client) {
  if (client === null || typeof client !== 'object') {
    throw new TypeError('Prepkey needs an ioredis or node-redis client');
  }
  if (typeof client.callBuffer === 'function') {
    return { library: 'ioredis', send: (args) => client.callBuffer(...args) };
  }
  if (typeof client.sendCommand === 'function') {
    // node-redis's cluster and sentinel clients take sendCommand(firstKey,
    // isReadonly, args, ...) and (isReadonly, args, ...): a sidecar is one
    // endpoint, reached with createClient or createClientPool.
    if (client.sendCommand.length > 2) {
      throw new TypeError('Prepkey needs a node-redis client from createClient or createClientPool, not a cluster or sentinel client');
    }
    const options = { typeMapping: { [RESP_BLOB_STRING]: Buffer, [RESP_NUMBER]: Number } };
    return { library: 'node-redis', send: (args) => client.sendCommand(args, options) };
  }
  throw new TypeError('Prepkey needs an ioredis client (callBuffer) or a node-redis client (sendCommand)');
}

function describe(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? `an instance of ${value.constructor?.name ?? 'Object'}` : `type ${typeof value}`;
}

function checkName(name) {
  if (typeof name !== 'string') {
    throw new TypeError(`name must be a string, got ${describe(name)}`);
  }
  if (!NAMESPACE.test(name)) {
    throw new RangeError(`invalid namespace name ${JSON.stringify(name)}: 1 to 64 of A-Z a-z 0-9 _ . -`);
  }
  return name;
}

// checkBytes accepts what the protocol carries as bytes: a string (sent as
// UTF-8) or a Buffer; any other Uint8Array is viewed as a Buffer.
function checkBytes(value, what) {
  if (typeof value === 'string' || Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError(`${what} must be a string or a Buffer, got ${describe(value)}`);
}

function checkKey(key, what = 'key') {
  const bytes = checkBytes(key, what);
  if (bytes.length === 0) throw new RangeError(`${what} must not be empty`);
  return bytes;
}

function checkOptions(options, allowed) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`options must be an object, got ${describe(options)}`);
  }
  for (const option of Object.keys(options)) {
    if (!allowed.includes(option)) throw new TypeError(`unknown option ${JSON.stringify(option)}`);
  }
  return options;
}

// The options that set a reservation's expiry; at most one of them. Omitted:
// the reservation is forever.
const TTL_OPTIONS = ['ttlMs', 'ttlSeconds', 'expiresAt', 'ttl'];

// ttlArgs turns the expiry option of options into its TTL words:
// - ttlMs: a positive integer number of milliseconds, PX;
// - ttlSeconds: a positive number of seconds, EX when whole, else PX with
//   millisecond precision (0.25 is PX 250; finer than a millisecond is an
//   error rather than a silent rounding);
// - expiresAt: a Date, an absolute expiry, PXAT;
// - ttl (deprecated): a number of milliseconds (PX) or a Date (PXAT). A
//   bare number read as milliseconds here and as seconds in the Python
//   helper, so it warns once (DeprecationWarning PREPKEY_TTL_NUMBER).
// Durations are counted from the backend's clock when the command runs.
function ttlArgs(options, deprecation) {
  const given = TTL_OPTIONS.filter((name) => options[name] !== undefined && options[name] !== null);
  if (given.length === 0) return [];
  if (given.length > 1) throw new TypeError(`options ${given.join(' and ')} cannot be used together`);
  const [option] = given;
  const ttl = options[option];
  if (option === 'ttlMs') {
    if (typeof ttl !== 'number') throw new TypeError(`ttlMs must be a number of milliseconds, got ${describe(ttl)}`);
    if (!Number.isSafeInteger(ttl) || ttl <= 0) throw new RangeError(`ttlMs must be a positive integer number of milliseconds, got ${ttl}`);
    return ['PX', String(ttl)];
  }
  if (option === 'ttlSeconds') {
    if (typeof ttl !== 'number') throw new TypeError(`ttlSeconds must be a number of seconds, got ${describe(ttl)}`);
    const ms = Math.round(ttl * 1000);
    if (!(ttl > 0) || !Number.isSafeInteger(ms) || Math.abs(ttl * 1000 - ms) > 1e-6 * Math.max(1, ms)) {
      throw new RangeError(`ttlSeconds must be a positive number of seconds in whole milliseconds, got ${ttl}`);
    }
    return Number.isInteger(ttl) ? ['EX', String(ttl)] : ['PX', String(ms)];
  }
  if (ttl instanceof Date) {
    const at = ttl.getTime();
    if (Number.isNaN(at)) throw new RangeError(`${option} is an invalid Date`);
    return ['PXAT', String(at)];
  }
  if (option === 'expiresAt') throw new TypeError(`expiresAt must be a Date, got ${describe(ttl)}`);
  if (typeof ttl === 'number') {
    if (!Number.isSafeInteger(ttl) || ttl <= 0) {
      throw new RangeError(`ttl must be a positive integer number of milliseconds, got ${ttl}`);
    }
    deprecation();
    return ['PX', String(ttl)];
  }
  throw new TypeError(`ttl must be a number of milliseconds or a Date, got ${describe(ttl)}`);
}

// warnTtlNumber warns, once per process, that a bare ttl number is
// deprecated.
let warnedTtlNumber = false;
function warnTtlNumber() {
  if (warnedTtlNumber) return;
  warnedTtlNumber = true;
  process.emitWarning('prepkey: a number `ttl` is milliseconds here and seconds in the Python helper; ' +
    'use ttlMs, ttlSeconds or expiresAt (a Date)', { type: 'DeprecationWarning', code: 'PREPKEY_TTL_NUMBER' });
}

function checkSignal(signal) {
  if (signal === undefined) return undefined;
  if (signal === null || typeof signal !== 'object' || typeof signal.aborted !== 'boolean' || typeof signal.throwIfAborted !== 'function') {
    throw new TypeError(`signal must be an AbortSignal, got ${describe(signal)}`);
  }
  return signal;
}

function toInteger(reply, command) {
  if (typeof reply === 'number') return reply;
  if (typeof reply === 'bigint' || typeof reply === 'string' || Buffer.isBuffer(reply)) return Number(String(reply));
  throw new PrepkeyError(`unexpected reply to ${command}: ${describe(reply)}`, { command });
}

function toBoolean(reply, command) {
  const n = toInteger(reply, command);
  if (n === 1) return true;
  if (n === 0) return false;
  throw new PrepkeyError(`unexpected reply to ${command}: ${n}`, { command });
}

// toExpiry reads a ttlAt: -1 is forever (null), anything else Unix ms.
function toExpiry(reply, command) {
  const at = toInteger(reply, command);
  return at === -1 ? null : new Date(at);
}

function isZeroCursor(cursor) {
  return String(cursor) === '0';
}

/**
 * The PK commands over an ioredis or node-redis client.
 *
 * Values and keys are returned as strings (UTF-8), or as Buffers when built
 * with `{ buffers: true }`. Argument errors (TypeError, RangeError) are raised
 * before anything is sent; a sidecar error is a PrepkeyError (UnavailableError,
 * MismatchError); a transport error is passed through as the library raised it
 * (outcomeUnknown tells which errors leave the outcome open). The client is
 * the caller's: the helper only sends commands through it, and never
 * connects, closes or reconfigures it.
 */
class Prepkey {
  #send;
  #buffers;

  /**
   * @param {object} client an ioredis Redis or a node-redis client (createClient, createClientPool)
   * @param {{buffers?: boolean}} [options]
   */
  constructor(client, options) {
    const { buffers = false } = checkOptions(options, ['buffers']);
    const { library, send } = senderFor(client);
    this.library = library;
    this.#send = send;
    this.#buffers = Boolean(buffers);
  }

  async #call(args) {
    try {
      return await this.#send(args);
    } catch (err) {
      throw translate(err, args[0]);
    }
  }

  #bytes(reply) {
    if (reply === null || reply === undefined) return null;
    const buffer = Buffer.isBuffer(reply) ? reply : Buffer.from(String(reply));
    return this.#buffers ? buffer : buffer.toString('utf8');
  }

  /**
   * PK.PREPARE: true reserved; false a live record holds the key. With
   * options.signal: aborted before sending, nothing is sent; aborted after,
   * the command is let to finish (it cannot be taken back from the wire),
   * a reservation it made is undone (PK.ROLLBACK … IFEQ value; after a 0 or
   * an outcome-unknown error, PK.GETVALUE first: our value is ours), and
   * then the signal's reason is raised (AbortedError when that could not be
   * checked or undone).
   */
  async prepare(name, key, value, options) {
    const { args, signal } = prepareArgs(name, key, value, options);
    return this.#prepare(args, signal, false);
  }

  /** PK.GET: the live record's value, or null (none, or expired). */
  async get(name, key) {
    const args = ['PK.GET', checkName(name), checkKey(key)];
    return this.#bytes(await this.#call(args));
  }

  /**
   * PK.GETVALUE: {value, expiresAt} of the record, live or expired while
   * retained (expiresAt null: forever); null when there is no record.
   */
  async getValue(name, key) {
    const args = ['PK.GETVALUE', checkName(name), checkKey(key)];
    const reply = await this.#call(args);
    if (reply === null || reply === undefined) return null;
    if (!Array.isArray(reply) || reply.length !== 2) {
      throw new PrepkeyError(`unexpected reply to PK.GETVALUE: ${describe(reply)}`, { command: 'PK.GETVALUE' });
    }
    return { value: this.#bytes(reply[0]), expiresAt: toExpiry(reply[1], 'PK.GETVALUE') };
  }

  /** PK.ROLLBACK: true deleted; false no record. */
  async rollback(name, key) {
    const args = ['PK.ROLLBACK', checkName(name), checkKey(key)];
    return toBoolean(await this.#call(args), 'PK.ROLLBACK');
  }

  /** PK.ROLLBACK … IFEQ value: true deleted; false no record or another value. */
  async rollbackIfEq(name, key, value) {
    const args = ['PK.ROLLBACK', checkName(name), checkKey(key), 'IFEQ', checkBytes(value, 'value')];
    return toBoolean(await this.#call(args), 'PK.ROLLBACK');
  }

  /**
   * PK.REPREPARE: replace the value of the live record. The new record is
   * forever unless `ttl` is given; `keepTTL` keeps its expiry. `ifEq`
   * replaces only when the current value is that. true replaced; false no
   * live record, or ifEq differs.
   */
  async reprepare(name, key, value, options) {
    const opts = checkOptions(options, ['ifEq', 'keepTTL', ...TTL_OPTIONS]);
    const { ifEq, keepTTL = false } = opts;
    const args = ['PK.REPREPARE', checkName(name), checkKey(key), checkBytes(value, 'value')];
    if (ifEq !== undefined) args.push('IFEQ', checkBytes(ifEq, 'ifEq'));
    if (typeof keepTTL !== 'boolean') throw new TypeError(`keepTTL must be a boolean, got ${describe(keepTTL)}`);
    const ttlOption = ttlArgs(opts, warnTtlNumber);
    if (keepTTL && ttlOption.length > 0) {
      throw new TypeError(`options keepTTL and ${TTL_OPTIONS.find((n) => opts[n] !== undefined && opts[n] !== null)} cannot be used together`);
    }
    if (keepTTL) args.push('KEEPTTL');
    args.push(...ttlOption);
    return toBoolean(await this.#call(args), 'PK.REPREPARE');
  }

  /**
   * A key change (PK.REPREPARE … FROM oldKey IFEQ oldValue): reserve newKey
   * for newValue and release oldKey, never half done. true moved; false a
   * live record holds newKey (nothing changed); MismatchError when oldKey has
   * no record with oldValue (nothing changed).
   */
  async changeKey(name, oldKey, oldValue, newKey, newValue, options) {
    const opts = checkOptions(options, TTL_OPTIONS);
    const args = [
      'PK.REPREPARE', checkName(name), checkKey(newKey, 'newKey'), checkBytes(newValue, 'newValue'),
      'FROM', checkKey(oldKey, 'oldKey'), 'IFEQ', checkBytes(oldValue, 'oldValue'), ...ttlArgs(opts, warnTtlNumber),
    ];
    // The sidecar refuses it too (ERR FROM key must differ…); refused here,
    // as the Go and Python helpers do, without a round trip.
    if (Buffer.from(args[2]).equals(Buffer.from(args[5]))) throw new RangeError('oldKey and newKey must differ');
    return toBoolean(await this.#call(args), 'PK.REPREPARE');
  }

  /**
   * PK.MPREPARE: reserve every [name, key, value] of entries, all or none.
   * true all reserved; false at least one key is held (nothing changed).
   */
  async mprepare(entries, options) {
    const opts = checkOptions(options, TTL_OPTIONS);
    if (!Array.isArray(entries)) throw new TypeError(`entries must be an array of [name, key, value], got ${describe(entries)}`);
    if (entries.length < 1 || entries.length > MAX_MPREPARE_ENTRIES) {
      throw new RangeError(`entries must hold 1 to ${MAX_MPREPARE_ENTRIES} [name, key, value], got ${entries.length}`);
    }
    const args = ['PK.MPREPARE', String(entries.length)];
    entries.forEach((entry, i) => {
      if (!Array.isArray(entry) || entry.length !== 3) {
        throw new TypeError(`entries[${i}] must be [name, key, value], got ${describe(entry)}`);
      }
      args.push(checkName(entry[0]), checkKey(entry[1], `entries[${i}] key`), checkBytes(entry[2], `entries[${i}] value`));
    });
    args.push(...ttlArgs(opts, warnTtlNumber));
    return toBoolean(await this.#call(args), 'PK.MPREPARE');
  }

  /**
   * PK.SCAN as an async iterator of {key, value, expiresAt}, following the
   * cursor until the sidecar answers "0". A record present and unchanged for
   * the whole iteration is yielded at least once, maybe twice. Options:
   * match (a glob), count (1-1000, a hint), live or expired (only those).
   * Argument errors are thrown by scan() itself, before anything is sent.
   */
  scan(name, options) {
    const { match, count, live = false, expired = false } = checkOptions(options, ['match', 'count', 'live', 'expired']);
    const base = ['PK.SCAN', checkName(name)];
    const rest = [];
    if (match !== undefined) rest.push('MATCH', checkBytes(match, 'match'));
    if (count !== undefined) {
      if (typeof count !== 'number') throw new TypeError(`count must be a number, got ${describe(count)}`);
      if (!Number.isInteger(count) || count < 1 || count > MAX_SCAN_COUNT) {
        throw new RangeError(`count must be an integer from 1 to ${MAX_SCAN_COUNT}, got ${count}`);
      }
      rest.push('COUNT', String(count));
    }
    if (typeof live !== 'boolean') throw new TypeError(`live must be a boolean, got ${describe(live)}`);
    if (typeof expired !== 'boolean') throw new TypeError(`expired must be a boolean, got ${describe(expired)}`);
    if (live && expired) throw new TypeError('options live and expired cannot be used together');
    if (live) rest.push('LIVE');
    if (expired) rest.push('EXPIRED');
    return this.#pages(base, rest);
  }

  async *#pages(base, rest) {
    // The cursor is sent back as the sidecar gave it (a Buffer): cursors are
    // opaque and must not be rebuilt.
    let cursor = '0';
    do {
      const reply = await this.#call([...base, cursor, ...rest]);
      if (!Array.isArray(reply) || reply.length !== 2 || !Array.isArray(reply[1])) {
        throw new PrepkeyError(`unexpected reply to PK.SCAN: ${describe(reply)}`, { command: 'PK.SCAN' });
      }
      cursor = reply[0];
      for (const [key, value, ttlAt] of reply[1]) {
        yield { key: this.#bytes(key), value: this.#bytes(value), expiresAt: toExpiry(ttlAt, 'PK.SCAN') };
      }
    } while (!isZeroCursor(cursor));
  }

  /**
   * The reservation flow: prepare key for value, run body(prepared), and if
   * the body fails after this call reserved the key, release that
   * reservation only (PK.ROLLBACK … IFEQ value), then raise the body's error.
   * - prepare true, body succeeds: its result; nothing rolled back.
   * - prepare true, body fails: rollback IFEQ (its false is not an error),
   *   then the body's error.
   * - prepare false: the record is read (PK.GETVALUE); when it holds exactly
   *   value, the reservation is ours (a resent PREPARE, see the README) and
   *   this is "prepare true". Else body(false) runs; nothing is rolled back;
   *   its result or error is the result.
   * - prepare fails with an error after which the outcome is unknown
   *   (outcomeUnknown: -UNAVAILABLE, a connection lost, a timeout): the
   *   record is read the same way; ours: "prepare true"; else that error,
   *   the body not run. Any other error: that error, the body not run.
   * - the rollback fails: the rollback's error, with `cause` the body's error.
   * - options.signal aborted: before sending, nothing is sent; while the
   *   PREPARE or the read is awaited, they are let to finish, a reservation
   *   of ours is undone, the body is not run, and the signal's reason is
   *   raised (AbortedError when that could not be checked or undone). Once
   *   the body runs the signal is the body's to watch: its error rolls back
   *   as any; its result, even after an abort, is returned (the reservation
   *   stays with the work the body did).
   */
  async usingPrepare(name, key, value, body, options) {
    const { args, signal } = prepareArgs(name, key, value, options);
    if (typeof body !== 'function') throw new TypeError(`body must be a function, got ${describe(body)}`);
    const prepared = await this.#prepare(args, signal, true);
    if (!prepared) return await body(false);
    try {
      return await body(true);
    } catch (bodyError) {
      try {
        await this.#rollbackIfEq(args[1], args[2], args[3]);
      } catch (rollbackError) {
        throw withCause(rollbackError, bodyError);
      }
      throw bodyError;
    }
  }

  // #prepare sends args (a PK.PREPARE) and settles what it did. adopt:
  // usingPrepare's rule, a 0 or an outcome-unknown error followed by a
  // read that finds our value counts as reserved. With signal aborted by
  // the time the command settles, the same read decides, a reservation of
  // ours is rolled back, and the reason is raised.
  async #prepare(args, signal, adopt) {
    signal?.throwIfAborted();
    const [, name, key, value] = args;
    let prepared = false;
    let failure;
    try {
      prepared = toBoolean(await this.#call(args), 'PK.PREPARE');
    } catch (err) {
      if (!outcomeUnknown(err) || !(adopt || signal?.aborted)) throw err;
      failure = err;
    }
    if (!prepared && (adopt || signal?.aborted)) {
      try {
        prepared = await this.#holdsOurs(name, key, value);
      } catch (readError) {
        if (signal?.aborted) throw aborted(signal, 'checked', readError);
        throw failure ?? readError;
      }
      if (!prepared && failure !== undefined && !signal?.aborted) throw failure;
    }
    if (signal?.aborted) {
      if (prepared) {
        try {
          await this.#rollbackIfEq(name, key, value);
        } catch (rollbackError) {
          throw aborted(signal, 'undone', rollbackError);
        }
      }
      throw signal.reason;
    }
    return prepared;
  }

  // #holdsOurs reads the record (PK.GETVALUE, live or expired while
  // retained) and tells whether it holds exactly value.
  async #holdsOurs(name, key, value) {
    const reply = await this.#call(['PK.GETVALUE', name, key]);
    if (reply === null || reply === undefined) return false;
    if (!Array.isArray(reply) || reply.length !== 2) {
      throw new PrepkeyError(`unexpected reply to PK.GETVALUE: ${describe(reply)}`, { command: 'PK.GETVALUE' });
    }
    return toBuffer(reply[0]).equals(toBuffer(value));
  }

  async #rollbackIfEq(name, key, value) {
    return toBoolean(await this.#call(['PK.ROLLBACK', name, key, 'IFEQ', value]), 'PK.ROLLBACK');
  }

  /**
   * A handle bound to one namespace with typed values: key(name, {codec})
   * encodes values with codec.encode (to a string or Buffer) and decodes
   * what the sidecar holds with codec.decode. The default codec writes JSON
   * as Jackson does (jackson.codec()), so that IFEQ matches records Wow
   * wrote; pass jackson.codec(schema) to mark Double fields.
   */
  key(name, options) {
    const { codec = defaultCodec } = checkOptions(options, ['codec']);
    if (codec === null || typeof codec !== 'object' || typeof codec.encode !== 'function' || typeof codec.decode !== 'function') {
      throw new TypeError(`codec must be an object with encode and decode functions, got ${describe(codec)}`);
    }
    return new PrepareKey(this, checkName(name), codec);
  }
}

function toBuffer(bytes) {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(String(bytes));
}

// aborted is the error raised when an abort after sending could not be
// resolved: the reservation may exist.
function aborted(signal, what, cause) {
  const message = `PK.PREPARE was aborted after it was sent, and whether it reserved the key could not be ${what}: ${cause?.message ?? cause}`;
  return new AbortedError(message, { command: 'PK.PREPARE', cause, reason: signal.reason });
}

const defaultCodec = jackson.codec();

/**
 * The PK commands of one namespace, with values of type T written and read
 * through a codec (see Prepkey#key). Keys are strings or Buffers.
 */
class PrepareKey {
  #pk;
  #codec;

  constructor(pk, name, codec) {
    this.#pk = pk;
    this.#codec = codec;
    this.name = name;
  }

  #encode(value, what = 'value') {
    const bytes = this.#codec.encode(value);
    return checkBytes(bytes, `${what} encoded by the codec`);
  }

  #decode(bytes) {
    return bytes === null ? null : this.#codec.decode(toBuffer(bytes));
  }

  /** PK.PREPARE key codec.encode(value): true reserved; false held. */
  async prepare(key, value, options) {
    return this.#pk.prepare(this.name, key, this.#encode(value), options);
  }

  /** PK.GET: the live record's value, decoded; null when none. */
  async get(key) {
    return this.#decode(await this.#pk.get(this.name, key));
  }

  /** PK.GETVALUE: {value (decoded), expiresAt}; null when no record. */
  async getValue(key) {
    const record = await this.#pk.getValue(this.name, key);
    return record === null ? null : { value: this.#decode(record.value), expiresAt: record.expiresAt };
  }

  /** PK.ROLLBACK: true deleted; false no record. */
  async rollback(key) {
    return this.#pk.rollback(this.name, key);
  }

  /** PK.ROLLBACK … IFEQ codec.encode(value). */
  async rollbackIfEq(key, value) {
    return this.#pk.rollbackIfEq(this.name, key, this.#encode(value));
  }

  /** PK.REPREPARE with an encoded value (and ifEq, encoded too). */
  async reprepare(key, value, options) {
    const opts = { ...checkOptions(options, ['ifEq', 'keepTTL', ...TTL_OPTIONS]) };
    if (opts.ifEq !== undefined) opts.ifEq = this.#encode(opts.ifEq, 'ifEq');
    return this.#pk.reprepare(this.name, key, this.#encode(value), opts);
  }

  /** changeKey with encoded values. */
  async changeKey(oldKey, oldValue, newKey, newValue, options) {
    return this.#pk.changeKey(this.name, oldKey, this.#encode(oldValue, 'oldValue'), newKey, this.#encode(newValue, 'newValue'), options);
  }

  /** usingPrepare with an encoded value (the same rules). */
  async usingPrepare(key, value, body, options) {
    return this.#pk.usingPrepare(this.name, key, this.#encode(value), body, options);
  }
}

function prepareArgs(name, key, value, options) {
  const opts = checkOptions(options, [...TTL_OPTIONS, 'signal']);
  const args = ['PK.PREPARE', checkName(name), checkKey(key), checkBytes(value, 'value'), ...ttlArgs(opts, warnTtlNumber)];
  return { args, signal: checkSignal(opts.signal) };
}

// withCause attaches the body's error to the rollback's error as `cause`,
// keeping the rollback error's own type (an UnavailableError stays one, so
// the caller knows the reservation may still exist). An error that already
// has a cause of its own (a library's) is wrapped instead, so neither is lost.
function withCause(rollbackError, bodyError) {
  if (rollbackError instanceof Error && !Object.hasOwn(rollbackError, 'cause')) {
    Object.defineProperty(rollbackError, 'cause', { value: bodyError, configurable: true, writable: true });
    return rollbackError;
  }
  const wrapped = new PrepkeyError(`PK.ROLLBACK failed after the body failed: ${rollbackError?.message ?? rollbackError}`,
    { command: 'PK.ROLLBACK', cause: bodyError });
  wrapped.rollbackError = rollbackError;
  return wrapped;
}

module.exports = { Prepkey, PrepareKey, PrepkeyError, UnavailableError, MismatchError, AbortedError, outcomeUnknown, jackson };
