// A TCP proxy between a client and the sidecar that can, once, hold or drop
// the reply to a given command: what a slow or broken network does, made
// to happen at a known point so that the tests wait on events, not sleeps.
//
//   const proxy = await Proxy.start(port);
//   const gate = proxy.hold('PK.PREPARE');   // next PK.PREPARE's reply
//   … start the call through a client connected to proxy.port …
//   await gate.held;        // the sidecar answered; the reply waits here
//   gate.release();         // or gate.drop(): close the client's connection
//
// A command is found by its name in the bytes the client sends (the helper
// writes names upper-case); its reply is the next bytes the sidecar sends on
// that connection (the tests send one command at a time).
'use strict';
const net = require('node:net');

class Proxy {
  #server;
  #target;
  #rules = [];
  #conns = new Set();

  constructor(server, target) {
    this.#server = server;
    this.#target = target;
    this.port = server.address().port;
    // How many client connections were accepted (a reconnect adds one).
    this.accepted = 0;
  }

  static async start(targetPort, host = '127.0.0.1') {
    let proxy;
    const server = net.createServer((client) => proxy.#accept(client));
    await new Promise((resolve, reject) => server.once('error', reject).listen(0, host, resolve));
    proxy = new Proxy(server, { port: targetPort, host });
    return proxy;
  }

  /** Hold the reply to the next `command`: {held, release(), drop()}. */
  hold(command) {
    return this.#rule(command, 'hold');
  }

  /**
   * Drop the reply to the next `command`: once the sidecar answered it, the
   * client's connection is closed without the reply. {held} resolves then.
   */
  drop(command) {
    return this.#rule(command, 'drop');
  }

  #rule(command, mode) {
    let resolveHeld;
    const rule = {
      command: Buffer.from(command),
      mode,
      held: new Promise((resolve) => { resolveHeld = resolve; }),
      resolveHeld,
      conn: null,
      release: () => rule.conn.release(),
      drop: () => rule.conn.drop(),
    };
    this.#rules.push(rule);
    return rule;
  }

  #accept(client) {
    this.accepted++;
    const server = net.connect(this.#target.port, this.#target.host);
    const conn = { client, server, sent: Buffer.alloc(0), armed: null, buffered: null };
    this.#conns.add(conn);
    const close = () => {
      this.#conns.delete(conn);
      client.destroy();
      server.destroy();
    };
    client.on('error', close).on('close', close);
    server.on('error', close).on('close', close);
    conn.release = () => {
      const buffered = conn.buffered;
      conn.buffered = null;
      if (buffered && buffered.length > 0) client.write(buffered);
    };
    conn.drop = () => {
      conn.buffered = null;
      close();
    };
    client.on('data', (chunk) => {
      // Keep the tail that could hold the start of a command name cut by
      // the chunk boundary.
      conn.sent = Buffer.concat([conn.sent.subarray(-64), chunk]);
      const i = this.#rules.findIndex((r) => conn.sent.includes(r.command));
      if (i >= 0 && conn.armed === null) {
        conn.armed = this.#rules.splice(i, 1)[0];
        conn.armed.conn = conn;
        conn.sent = Buffer.alloc(0);
      }
      server.write(chunk);
    });
    server.on('data', (chunk) => {
      if (conn.buffered !== null) {
        conn.buffered = Buffer.concat([conn.buffered, chunk]);
        return;
      }
      const rule = conn.armed;
      if (rule === null) {
        client.write(chunk);
        return;
      }
      conn.armed = null;
      if (rule.mode === 'drop') {
        close();
      } else {
        conn.buffered = chunk;
      }
      rule.resolveHeld();
    });
  }

  /**
   * Forget rules not triggered yet and let held replies through: a test
   * that failed before its command was sent leaves nothing for the next.
   */
  reset() {
    this.#rules = [];
    for (const conn of this.#conns) {
      conn.armed = null;
      conn.release();
    }
  }

  /** Stop listening and close every connection. */
  async close() {
    for (const conn of this.#conns) {
      conn.client.destroy();
      conn.server.destroy();
    }
    await new Promise((resolve) => this.#server.close(resolve));
  }
}

module.exports = { Proxy };
