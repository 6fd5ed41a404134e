// Types of prepkey (index.js), written by hand; test/types/usage.ts checks
// them against real ioredis and node-redis clients (test/types.test.js).

/// <reference types="node" />

/** Bytes as the protocol carries them: a string (sent as UTF-8) or a Buffer (any Uint8Array). */
export type Bytes = string | Buffer | Uint8Array;

/**
 * A reservation's expiry: a number is a duration in milliseconds (PX, counted
 * from the backend's clock when the command runs), a Date an absolute time
 * (PXAT). Omitted: forever.
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

export interface TtlOptions {
  ttl?: Ttl;
}

interface ReprepareBase {
  /** Replace only when the current value is this one. */
  ifEq?: Bytes;
}

/**
 * reprepare's options: the new record is forever unless ttl is given;
 * keepTTL keeps its expiry (not both).
 */
export type ReprepareOptions =
  | (ReprepareBase & { keepTTL: true; ttl?: undefined })
  | (ReprepareBase & { keepTTL?: false; ttl?: Ttl });

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
  prepare(name: string, key: Bytes, value: Bytes, options?: TtlOptions): Promise<boolean>;
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
   * its `cause` the body's error. An error on prepare rejects without running
   * the body.
   */
  usingPrepare<T>(name: string, key: Bytes, value: Bytes, body: (prepared: boolean) => T | Promise<T>, options?: TtlOptions): Promise<T>;
}

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
