// Checked by `tsc -p test/types` (test/types.test.js), never run: the
// hand-written index.d.ts against real ioredis and node-redis clients. Every
// line marked as an expected error must stay an error, or tsc fails.
import Redis from 'ioredis';
import { createClient, createClientPool, createCluster } from 'redis';
import {
  Prepkey, PrepkeyError, UnavailableError, MismatchError, PrepkeyRecord, ScanRecord,
  AbortedError, PrepareKey, Codec, jackson, outcomeUnknown,
} from '../..';

async function usage(): Promise<void> {
  const ioredis = new Prepkey(new Redis());
  const nodeRedis = new Prepkey(createClient());
  const ioredisBuffers = new Prepkey(new Redis(), { buffers: true });
  const nodeRedisResp3 = new Prepkey(createClient({ RESP: 3 }), { buffers: true });
  const pool = new Prepkey(createClientPool());
  const library: 'ioredis' | 'node-redis' = ioredis.library;

  const reserved: boolean = await ioredis.prepare('username', 'alice', '{"userId":"42"}', { ttl: 60000 });
  await nodeRedis.prepare('username', Buffer.from('alice'), new Uint8Array([1]), { ttl: new Date() });
  const value: string | null = await ioredis.get('username', 'alice');
  const bytes: Buffer | null = await ioredisBuffers.get('username', 'alice');
  const record: PrepkeyRecord | null = await nodeRedis.getValue('username', 'alice');
  const expiresAt: Date | null | undefined = record?.expiresAt;
  const binaryRecord: PrepkeyRecord<Buffer> | null = await nodeRedisResp3.getValue('username', 'alice');
  await ioredis.rollback('username', 'alice');
  await ioredis.rollbackIfEq('username', 'alice', '{"userId":"42"}');
  await ioredis.reprepare('username', 'alice', 'v2', { ifEq: 'v1', keepTTL: true });
  await ioredis.reprepare('username', 'alice', 'v2', { ttl: 1000 });
  await ioredis.changeKey('username', 'alice', 'v', 'alice2', 'v', { ttl: 1000 });
  await ioredis.mprepare([['username', 'alice', 'u1'], ['email', 'a@example.com', 'u1']], { ttl: new Date() });
  for await (const r of nodeRedis.scan('username', { match: 'a*', count: 100, live: true })) {
    const scanned: ScanRecord = r;
    const key: string = r.key;
  }
  for await (const r of ioredisBuffers.scan('username', { expired: true })) {
    const key: Buffer = r.key;
  }
  const result: number = await ioredis.usingPrepare('username', 'alice', 'v', async (prepared: boolean) => (prepared ? 1 : 0), { ttl: 5000 });
  const syncResult: string = await ioredis.usingPrepare('username', 'alice', 'v', (prepared) => String(prepared));

  try {
    await ioredis.prepare('username', 'alice', 'v');
  } catch (err) {
    if (err instanceof UnavailableError) {
      const code: string | undefined = err.code;
      const command: string | undefined = err.command;
    } else if (err instanceof MismatchError || err instanceof PrepkeyError) {
      const message: string = err.message;
    }
  }

  // Explicit units, a signal, the typed handle.
  await ioredis.prepare('username', 'alice', 'v', { ttlSeconds: 0.25, signal: AbortSignal.timeout(1000) });
  await nodeRedis.usingPrepare('username', 'alice', 'v', async () => 1, { ttlMs: 1500, signal: new AbortController().signal });
  await ioredis.mprepare([['username', 'alice', 'u1']], { expiresAt: new Date() });
  await ioredis.reprepare('username', 'alice', 'v', { ttlSeconds: 5 });
  interface User { userId: string; name: string }
  const users: PrepareKey<User> = ioredis.key<User>('username');
  const reservedUser: boolean = await users.prepare('alice', { userId: '42', name: 'Alice' }, { ttlSeconds: 60 });
  const user: User | null = await users.get('alice');
  const userRecord = await users.getValue('alice');
  const userExpiry: Date | null | undefined = userRecord?.expiresAt;
  const userValue: User | undefined = userRecord?.value;
  await users.reprepare('alice', { userId: '42', name: 'A' }, { ifEq: { userId: '42', name: 'Alice' }, keepTTL: true });
  await users.changeKey('alice', { userId: '42', name: 'A' }, 'alice2', { userId: '42', name: 'A' });
  await users.rollbackIfEq('alice2', { userId: '42', name: 'A' });
  await users.rollback('alice2');
  const sent: 'sent' | 'taken' = await users.usingPrepare('bob', { userId: '7', name: 'Bob' }, async (p) => (p ? 'sent' : 'taken'));
  interface Price { sku: string; amount: number }
  const codec: Codec<Price> = jackson.codec<Price>({ amount: 'double' });
  const prices = nodeRedis.key('price', { codec });
  await prices.prepare('A-1', { sku: 'A-1', amount: 100 });
  const json: string = jackson.stringify({ x: jackson.double(100), l: 9007199254740993n, tags: [], m: new Map([['a', 1]]) });
  const maybe: boolean = outcomeUnknown(new Error('x'));
  try {
    await users.prepare('alice', { userId: '1', name: 'x' });
  } catch (err) {
    if (err instanceof AbortedError) {
      const reason: unknown = err.reason;
      const code: string | undefined = err.code;
    }
  }
  // @ts-expect-error a typed value of another shape
  await users.prepare('alice', { id: 42 });
  // @ts-expect-error two units at once
  await ioredis.prepare('username', 'alice', 'v', { ttlMs: 5, ttlSeconds: 5 });
  // @ts-expect-error keepTTL with a unit
  await ioredis.reprepare('username', 'alice', 'v', { keepTTL: true, ttlSeconds: 5 });
  // @ts-expect-error a signal is an AbortSignal
  await ioredis.prepare('username', 'alice', 'v', { signal: true });
  // @ts-expect-error expiresAt is a Date
  await ioredis.prepare('username', 'alice', 'v', { expiresAt: 5 });
  // @ts-expect-error the Jackson schema knows no float
  jackson.codec({ amount: 'float' });

  // @ts-expect-error a number is not a value
  await ioredis.prepare('username', 'alice', 42);
  // @ts-expect-error a ttl is milliseconds or a Date
  await ioredis.prepare('username', 'alice', 'v', { ttl: '10s' });
  // @ts-expect-error keepTTL and ttl together
  await ioredis.reprepare('username', 'alice', 'v', { keepTTL: true, ttl: 1000 });
  // @ts-expect-error live and expired together
  nodeRedis.scan('username', { live: true, expired: true });
  // @ts-expect-error strings from a Prepkey built without buffers
  const notBuffer: Buffer | null = await ioredis.get('username', 'alice');
  // @ts-expect-error not a Redis client
  new Prepkey({ get: () => null });
  // @ts-expect-error a node-redis cluster client sends commands another way
  new Prepkey(createCluster({ rootNodes: [] }));
  // @ts-expect-error entries are [name, key, value]
  await ioredis.mprepare([['username', 'alice']]);
}

export { usage };
