// Shared by the test files: the sidecars from the environment (see
// clients/run.sh), the four client configurations every case runs over, and
// client wrappers that record or fail what the helper sends.
'use strict';
const { randomBytes } = require('node:crypto');
const path = require('node:path');
const Redis = require('ioredis');
const { createClient } = require('redis');

function env(name) {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set: the tests need the sidecars of clients/run.sh (see the README)`);
  return value;
}

const host = process.env.PREPKEY_HOST || '127.0.0.1';
const password = env('PREPKEY_PASSWORD');
const port = Number(env('PREPKEY_PORT'));
const unavailablePort = Number(env('PREPKEY_UNAVAILABLE_PORT'));
const backend = process.env.PREPKEY_BACKEND || 'unknown backend';

// Both libraries speak RESP3 (ioredis 6: `protocol: 3`, its default;
// node-redis: `RESP: 3`), so every case runs four times.
const configs = [
  { library: 'ioredis', resp: 2 },
  { library: 'ioredis', resp: 3 },
  { library: 'node-redis', resp: 2 },
  { library: 'node-redis', resp: 3 },
].map((c) => ({ ...c, label: `${c.library} RESP${c.resp} (${backend})` }));

// connect opens a client of the configuration to the sidecar at port.
async function connect(config, toPort = port) {
  if (config.library === 'ioredis') {
    const client = new Redis({ host, port: toPort, password, protocol: config.resp, lazyConnect: true });
    await client.connect();
    return { client, close: () => client.quit() };
  }
  const client = createClient({ socket: { host, port: toPort, reconnectStrategy: false }, password, RESP: config.resp });
  client.on('error', () => {}); // a failing test reports its own error
  await client.connect();
  return { client, close: () => client.close() };
}

// wrap returns an object that looks to Prepkey like the library's client
// (callBuffer for ioredis, sendCommand for node-redis), records every
// command sent through it in `sent`, and hands each to route(args, forward)
// which may answer otherwise: fail it, or forward(args, other) to send it
// through another client (to another sidecar) with the same call options.
function wrap(client, route = (args, forward) => forward(args)) {
  const sent = [];
  if (typeof client.callBuffer === 'function') {
    return {
      sent,
      callBuffer: (...args) => {
        sent.push(args);
        return route(args, (a, to = client) => to.callBuffer(...a));
      },
    };
  }
  return {
    sent,
    sendCommand: (args, options) => {
      sent.push(args);
      return route(args, (a, to = client) => to.sendCommand(a, options));
    },
  };
}

// unique is a namespace (or key) no other run or case uses.
function unique(prefix) {
  return `${prefix}-${randomBytes(6).toString('hex')}`;
}

// until polls check every 20 ms until it returns true, failing after 10 s:
// a late expiry fails the test instead of passing it vacuously.
async function until(what, check) {
  const deadline = Date.now() + 10000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

// The Jackson bytes shared by the helpers' tests: clients/testdata, or
// PREPKEY_TESTDATA when these tests run outside the repository (against
// the installed tarball, clients/run.sh node-package).
const jacksonFile = path.join(process.env.PREPKEY_TESTDATA || path.join(__dirname, '..', '..', '..', 'testdata'), 'jackson.json');

module.exports = { configs, connect, wrap, unique, until, unavailablePort, jacksonFile };
