// Types of prepkey (index.js), written by hand; test/types/usage.ts checks
// them against real ioredis and node-redis clients (test/types.test.js).

/// <reference types="node" />

/** Bytes as the protocol carries them: a string (sent as UTF-8) or a Buffer (any Uint8Array). */
export type Bytes = string | Buffer | Uint8Array;

/**
 * The deprecated `ttl` option: a number is a duration in milliseconds (PX;
 * it warns once: the Python helper reads a number as seconds), a Date an
 * absolute time (PXAT). Use ttlMs, ttlSeconds or expiresAt.
 */
export type Ttl = number | Date;

/** What Prepkey needs of an ioredis client (Redis). */
export interface IoredisLike {
  callBuffer(...args: [command: string, ...args: (string | Buffer | number)[]]): Promise<unknown>;
}

/** What Prepkey needs of a node-redis client (createClient, createClientPool). */
export interface NodeRedisLike {
  sendCommand(args: ReadonlyArray<string | Buffer>, options?: any): Promise<unknown>;
}

/** A record as PK.GETVALUE answers it. */
export interface PrepkeyRecord<V extends string | Buffer = string> {
  value: V;
  /** When the reservation expires (it may be in the past: expired, still retained); null for forever. */
  expiresAt: Date | null;
}

/** A record as PK.SCAN answers it. */
export interface ScanRecord<V extends string | Buffer = string> extends PrepkeyRecord<V> {
  key: V;
}

/**
 * A reservation's expiry, at most one of these (durations counted from the
 * backend's clock when the command runs); none: forever.
 */
export type TtlOptions =
  | { ttlMs?: number; ttlSeconds?: undefined; expiresAt?: undefined; ttl?: undefined }
  | { ttlMs?: undefined; ttlSeconds?: number; expiresAt?: undefined; ttl?: undefined }
  | { ttlMs?: undefined; ttlSeconds?: undefined; expiresAt?: Date; ttl?: undefined }
  | {
      ttlMs?: undefined; ttlSeconds?: undefined; expiresAt?: undefined;
      /** @deprecated a number is milliseconds here, seconds in Python: use ttlMs, ttlSeconds or expiresAt. */
      ttl?: Ttl;
    };

/** prepare's and usingPrepare's options: an expiry and an AbortSignal. */
export type PrepareOptions = TtlOptions & {
  /**
   * Aborted before sending: nothing is sent. Aborted after: the command is
   * let to finish, a reservation it made is undone, then the signal's reason
   * is raised (AbortedError when that could not be checked or undone).
   */
  signal?: AbortSignal;
};

interface ReprepareBase<B> {
  /** Replace only when the current value is this one. */
  ifEq?: B;
}

/**
 * reprepare's options: the new record is forever unless ttl is given;
 * keepTTL keeps its expiry (not both).
 */
export type ReprepareOptions<B = Bytes> =
  | (ReprepareBase<B> & { keepTTL: true; ttl?: undefined; ttlMs?: undefined; ttlSeconds?: undefined; expiresAt?: undefined })
  | (ReprepareBase<B> & { keepTTL?: false } & TtlOptions);

interface ScanBase {
  /** Redis glob on keys (`*`, `?`, `[...]`, `\`), applied after records are read. */
  match?: Bytes;
  /** Work per call, 1 to 1000 (a hint; default 10). */
  count?: number;
}

/** scan's options: live (live records only) or expired (expired but retained only), not both; neither: all. */
export type ScanOptions =
  | (ScanBase & { live?: boolean; expired?: false })
  | (ScanBase & { live?: false; expired: true });

/** One [name, key, value] of mprepare. */
export type PrepareEntry = readonly [name: string, key: Bytes, value: Bytes];

/**
 * The PK commands over an ioredis or node-redis client. Argument errors
 * (TypeError, RangeError) reject before anything is sent; a sidecar error
 * rejects with a PrepkeyError (UnavailableError, MismatchError); a transport
 * error is passed through as the library raised it (its outcome is unknown,
 * as UnavailableError's).
 */
export interface Prepkey<V extends string | Buffer = string> {
  /** Which library the client is from. */
  readonly library: 'ioredis' | 'node-redis';

  /** PK.PREPARE: true reserved; false a live record holds the key. */
  prepare(name: string, key: Bytes, value: Bytes, options?: PrepareOptions): Promise<boolean>;
  /** PK.GET: the live record's value; null when none or expired. */
  get(name: string, key: Bytes): Promise<V | null>;
  /** PK.GETVALUE: the record, live or expired while retained; null when none. */
  getValue(name: string, key: Bytes): Promise<PrepkeyRecord<V> | null>;
  /** PK.ROLLBACK: true deleted; false no record. */
  rollback(name: string, key: Bytes): Promise<boolean>;
  /** PK.ROLLBACK … IFEQ value: true deleted; false no record or another value. */
  rollbackIfEq(name: string, key: Bytes, value: Bytes): Promise<boolean>;
  /** PK.REPREPARE: true replaced; false no live record, or ifEq differs. */
  reprepare(name: string, key: Bytes, value: Bytes, options?: ReprepareOptions): Promise<boolean>;
  /**
   * A key change: true newKey reserved and oldKey released; false a live
   * record holds newKey; rejects with MismatchError when oldKey has no record
   * with oldValue. Never half done.
   */
  changeKey(name: string, oldKey: Bytes, oldValue: Bytes, newKey: Bytes, newValue: Bytes, options?: TtlOptions): Promise<boolean>;
  /** PK.MPREPARE: true all reserved; false at least one held, nothing changed. */
  mprepare(entries: ReadonlyArray<PrepareEntry>, options?: TtlOptions): Promise<boolean>;
  /** PK.SCAN, following the cursor to the end; throws argument errors when called. */
  scan(name: string, options?: ScanOptions): AsyncGenerator<ScanRecord<V>, void, undefined>;
  /**
   * Prepare, run body(prepared); if the body fails after this call reserved
   * the key, roll back that reservation (IFEQ value) and reject with the
   * body's error; if that rollback fails, reject with the rollback's error,
   * its `cause` the body's error. After a 0, or an error after which the
   * outcome is unknown, the record is read: holding exactly value, it is
   * ours (prepared true). Any other error on prepare rejects without
   * running the body.
   */
  usingPrepare<T>(name: string, key: Bytes, value: Bytes, body: (prepared: boolean) => T | Promise<T>, options?: PrepareOptions): Promise<T>;
  /** A handle bound to name, with values of type T through codec (default: Jackson's JSON). */
  key<T = unknown>(name: string, options?: { codec?: Codec<T> }): PrepareKey<T>;
}

/** How the typed handle writes and reads values. */
export interface Codec<T> {
  encode(value: T): string | Buffer | Uint8Array;
  decode(bytes: Buffer): T;
}

/** The PK commands of one namespace with values of type T (Prepkey#key). */
export declare class PrepareKey<T> {
  private constructor();
  readonly name: string;
  prepare(key: Bytes, value: T, options?: PrepareOptions): Promise<boolean>;
  get(key: Bytes): Promise<T | null>;
  getValue(key: Bytes): Promise<{ value: T; expiresAt: Date | null } | null>;
  rollback(key: Bytes): Promise<boolean>;
  rollbackIfEq(key: Bytes, value: T): Promise<boolean>;
  reprepare(key: Bytes, value: T, options?: ReprepareOptions<T>): Promise<boolean>;
  changeKey(oldKey: Bytes, oldValue: T, newKey: Bytes, newValue: T, options?: TtlOptions): Promise<boolean>;
  usingPrepare<R>(key: Bytes, value: T, body: (prepared: boolean) => R | Promise<R>, options?: PrepareOptions): Promise<R>;
}

/** A JSON value the Jackson codec writes; Double marks a Kotlin Double. */
export type JacksonValue =
  | string | number | bigint | boolean | null | JacksonDouble
  | readonly JacksonValue[] | { readonly [field: string]: JacksonValue } | ReadonlyMap<string, JacksonValue>;

/** Which numbers are Doubles: 'double' (others are documentation), fields, [element]; '*' any field. */
export type JacksonSchema =
  | 'double' | 'int' | 'long' | 'string' | 'boolean' | 'any'
  | readonly [JacksonSchema] | { readonly [field: string]: JacksonSchema };

/** A number to be written as a Kotlin Double (jackson.double(100) → 100.0). */
export declare class JacksonDouble {
  private constructor();
  readonly value: number;
}

/** JSON as Jackson writes a Kotlin data class (clients/testdata/jackson.json). */
export declare const jackson: {
  /** Mark a number as a Double: 100 is written 100.0. */
  double(value: number): JacksonDouble;
  /** The JSON text of value. */
  stringify(value: JacksonValue, schema?: JacksonSchema): string;
  /** A codec: encode writes Jackson's bytes, decode is JSON.parse. */
  codec<T = any>(schema?: JacksonSchema): Codec<T>;
  /** x as Java's Double.toString writes it. */
  formatDouble(x: number): string;
};

/**
 * True when err leaves open whether the command took effect (-UNAVAILABLE,
 * a connection lost or reset while the reply was awaited, a timeout, an
 * AbortedError): read the record before deciding. False for a refused
 * connection, a closed or offline client, other replies and argument errors.
 */
export declare function outcomeUnknown(err: unknown): boolean;

/**
 * new Prepkey(client): keys and values come back as strings (UTF-8);
 * new Prepkey(client, { buffers: true }): as Buffers, byte for byte.
 */
export interface PrepkeyConstructor {
  new (client: IoredisLike | NodeRedisLike, options?: { buffers?: false }): Prepkey<string>;
  new (client: IoredisLike | NodeRedisLike, options: { buffers: true }): Prepkey<Buffer>;
  readonly prototype: Prepkey<string | Buffer>;
}

export declare const Prepkey: PrepkeyConstructor;

/** The base of every error raised for a sidecar reply. */
export class PrepkeyError extends Error {
  constructor(message: string, details?: { code?: string; command?: string; cause?: unknown });
  /** The reply's first word: ERR, UNAVAILABLE, MISMATCH, NOAUTH, ... */
  readonly code: string | undefined;
  /** The PK command that got the reply. */
  readonly command: string | undefined;
  /** Set when a rollback error that had a cause of its own was wrapped by usingPrepare. */
  readonly rollbackError?: unknown;
}

/**
 * -UNAVAILABLE: the backend failed or did not answer in time; the command
 * may or may not have taken effect. Check with getValue before retrying.
 */
export class UnavailableError extends PrepkeyError {}

/** -MISMATCH: changeKey's old key has no record with that value; nothing changed. */
export class MismatchError extends PrepkeyError {}

/**
 * A prepare aborted after it was sent whose reservation could not be checked
 * or undone: it may exist. `reason` is the signal's, `cause` the error of
 * the check or rollback.
 */
export class AbortedError extends PrepkeyError {
  readonly reason: unknown;
}
