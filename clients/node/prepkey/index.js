// prepkey: a typed helper for the PK commands of the prepkey sidecar, over
// the Redis client an application already has (ioredis or node-redis).
//
// Every operation is one PK command sent through the client's generic call
// (ioredis `callBuffer`, node-redis `sendCommand`), so the client's own
// connection handling, RESP2/RESP3 choice, pipelining and auth stay as the
// application configured them. Replies are read as Buffers so that keys and
// values round-trip byte for byte whatever the client's decoding settings.
'use strict';

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

// Each class names itself (err.name, and what util.inspect prints), as
// Node's own errors do, on the prototype where it can still be overridden.
for (const type of [PrepkeyError, UnavailableError, MismatchError]) {
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

// ttlArgs turns a ttl into its TTL option: a number is a duration in
// milliseconds (PX, counted from the backend's clock when the command runs),
// a Date an absolute expiry (PXAT). No ttl: the reservation is forever.
function ttlArgs(ttl) {
  if (ttl === undefined || ttl === null) return [];
  if (typeof ttl === 'number') {
    if (!Number.isSafeInteger(ttl) || ttl <= 0) {
      throw new RangeError(`ttl must be a positive integer number of milliseconds, got ${ttl}`);
    }
    return ['PX', String(ttl)];
  }
  if (ttl instanceof Date) {
    const at = ttl.getTime();
    if (Number.isNaN(at)) throw new RangeError('ttl is an invalid Date');
    return ['PXAT', String(at)];
  }
  throw new TypeError(`ttl must be a number of milliseconds or a Date, got ${describe(ttl)}`);
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
 * MismatchError); a transport error is passed through as the library raised it.
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

  /** PK.PREPARE: true reserved; false a live record holds the key. */
  async prepare(name, key, value, options) {
    const args = prepareArgs(name, key, value, options);
    return toBoolean(await this.#call(args), 'PK.PREPARE');
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
    const { ifEq, keepTTL = false, ttl } = checkOptions(options, ['ifEq', 'keepTTL', 'ttl']);
    const args = ['PK.REPREPARE', checkName(name), checkKey(key), checkBytes(value, 'value')];
    if (ifEq !== undefined) args.push('IFEQ', checkBytes(ifEq, 'ifEq'));
    if (typeof keepTTL !== 'boolean') throw new TypeError(`keepTTL must be a boolean, got ${describe(keepTTL)}`);
    const ttlOption = ttlArgs(ttl);
    if (keepTTL && ttlOption.length > 0) throw new TypeError('options keepTTL and ttl cannot be used together');
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
    const { ttl } = checkOptions(options, ['ttl']);
    const args = [
      'PK.REPREPARE', checkName(name), checkKey(newKey, 'newKey'), checkBytes(newValue, 'newValue'),
      'FROM', checkKey(oldKey, 'oldKey'), 'IFEQ', checkBytes(oldValue, 'oldValue'), ...ttlArgs(ttl),
    ];
    return toBoolean(await this.#call(args), 'PK.REPREPARE');
  }

  /**
   * PK.MPREPARE: reserve every [name, key, value] of entries, all or none.
   * true all reserved; false at least one key is held (nothing changed).
   */
  async mprepare(entries, options) {
    const { ttl } = checkOptions(options, ['ttl']);
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
    args.push(...ttlArgs(ttl));
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
   * - prepare false: body(false) runs; nothing is rolled back; its result or
   *   error is the result.
   * - prepare true, body succeeds: its result; nothing rolled back.
   * - prepare true, body fails: rollback IFEQ (its false is not an error),
   *   then the body's error.
   * - the rollback fails: the rollback's error, with `cause` the body's error.
   * - prepare fails (UnavailableError, ...): that error; the body is not run.
   */
  async usingPrepare(name, key, value, body, options) {
    const args = prepareArgs(name, key, value, options);
    if (typeof body !== 'function') throw new TypeError(`body must be a function, got ${describe(body)}`);
    const prepared = toBoolean(await this.#call(args), 'PK.PREPARE');
    if (!prepared) return await body(false);
    try {
      return await body(true);
    } catch (bodyError) {
      try {
        await this.rollbackIfEq(name, key, value);
      } catch (rollbackError) {
        throw withCause(rollbackError, bodyError);
      }
      throw bodyError;
    }
  }
}

function prepareArgs(name, key, value, options) {
  const { ttl } = checkOptions(options, ['ttl']);
  return ['PK.PREPARE', checkName(name), checkKey(key), checkBytes(value, 'value'), ...ttlArgs(ttl)];
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

module.exports = { Prepkey, PrepkeyError, UnavailableError, MismatchError };
