"""A TCP proxy in front of a sidecar that holds or drops what a test says, so
that a test can cancel a call at a chosen await point or lose a reply,
deterministically (events, not sleeps).

It runs its own asyncio loop in a thread, so sync and asyncio tests use it
alike. Each connection is served one command at a time (redis-py sends one
command and reads its reply before the next, outside pipelines): the proxy
reads a whole command from the client, applies the first rule that matches
it, forwards it, reads the whole reply and relays it. Rules:

- ``hold_request``: keep the command (not sent to the sidecar) until
  ``release()``; if the client has gone by then, the command is dropped.
- ``hold_reply``: send the command (the sidecar executes it), keep the reply
  until ``release()``.
- ``drop_reply``: send the command, read its reply, then close the client's
  connection without relaying it: the reply is lost after the command took
  effect, as when a connection breaks at the worst moment.

A rule matches a command by name (``b"PK.PREPARE"``; ``b"*"``: any, such as
the AUTH or HELLO that opens a connection) and applies ``times`` times.
``seen`` lists the names of the commands read from clients, in order. ``reached`` (a threading.Event) is set when a rule applied (a hold is
in place, or a reply was dropped).
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from typing import List, Optional, Set, Tuple


@dataclass
class Rule:
    action: str  # hold_request, hold_reply, drop_reply
    command: bytes
    times: int = 1
    reached: threading.Event = field(default_factory=threading.Event)
    released: threading.Event = field(default_factory=threading.Event)


async def _read_line(reader: asyncio.StreamReader) -> bytes:
    line = await reader.readuntil(b"\r\n")
    return line


async def read_command(reader: asyncio.StreamReader) -> Tuple[bytes, List[bytes]]:
    """One command as redis-py sends it (an array of bulk strings): its bytes
    and its arguments."""
    head = await _read_line(reader)
    if not head.startswith(b"*"):
        raise ValueError(f"not a command: {head!r}")
    raw = [head]
    args: List[bytes] = []
    for _ in range(int(head[1:-2])):
        size_line = await _read_line(reader)
        body = await reader.readexactly(int(size_line[1:-2]) + 2)
        raw += [size_line, body]
        args.append(body[:-2])
    return b"".join(raw), args


async def read_reply(reader: asyncio.StreamReader) -> bytes:
    """One whole RESP2 or RESP3 reply, as bytes."""
    line = await _read_line(reader)
    kind, rest = line[:1], line[1:-2]
    if kind in b"$!=":  # bulk string, bulk error, verbatim string
        if rest == b"-1":
            return line
        return line + await reader.readexactly(int(rest) + 2)
    if kind in b"*~>":  # array, set, push
        out = [line]
        for _ in range(max(int(rest), 0)):
            out.append(await read_reply(reader))
        return b"".join(out)
    if kind == b"%" or kind == b"|":  # map, attribute: pairs
        out = [line]
        for _ in range(2 * int(rest)):
            out.append(await read_reply(reader))
        reply = b"".join(out)
        return reply + await read_reply(reader) if kind == b"|" else reply
    return line  # + - : _ , # (


class Proxy:
    """``Proxy(host, port)``: listening on ``self.port`` once constructed;
    ``close()`` stops it (tests: addCleanup)."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.rules: List[Rule] = []
        self.connections = 0
        self.seen: List[bytes] = []
        self.dropped_requests = 0
        self._serving: Set["asyncio.Task[None]"] = set()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the proxy did not start")

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._serve, "127.0.0.1", 0)
        )
        self.port = self._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            for task in list(self._serving):
                task.cancel()
            await asyncio.gather(*self._serving, return_exceptions=True)
            await self._server.wait_closed()

        self.release()
        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def rule(self, action: str, command: bytes, times: int = 1) -> Rule:
        """Adds a rule (see the module) and returns it (``rule.reached``)."""
        assert action in ("hold_request", "hold_reply", "drop_reply"), action
        r = Rule(action, command, times)
        with self._lock:
            self.rules.append(r)
        return r

    def release(self) -> None:
        """Lets the holds of every rule added so far go (a rule added later
        holds until the next release)."""
        with self._lock:
            for r in self.rules:
                r.released.set()

    def _match(self, args: List[bytes]) -> Optional[Rule]:
        with self._lock:
            for r in self.rules:
                if r.times > 0 and args and r.command in (b"*", args[0].upper()):
                    r.times -= 1
                    return r
        return None

    async def _released_or_gone(self, rule: Rule, client: asyncio.StreamReader) -> bool:
        """Waits for release(); False when the client closed first."""
        loop = asyncio.get_running_loop()
        release = loop.run_in_executor(None, rule.released.wait)
        gone = asyncio.ensure_future(client.read(1))
        done, _ = await asyncio.wait({release, gone}, return_when=asyncio.FIRST_COMPLETED)
        if gone in done:
            return False
        gone.cancel()
        try:
            await gone
        except asyncio.CancelledError:
            pass
        return True

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._serving.add(task)
        server_r, server_w = await asyncio.open_connection(*self.target)
        try:
            while True:
                try:
                    raw, args = await read_command(client_r)
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                self.seen.append(args[0].upper())
                r = self._match(args)
                if r is not None and r.action == "hold_request":
                    r.reached.set()
                    if not await self._released_or_gone(r, client_r):
                        self.dropped_requests += 1
                        return
                server_w.write(raw)
                await server_w.drain()
                reply = await read_reply(server_r)
                if r is not None and r.action == "drop_reply":
                    r.reached.set()
                    return
                if r is not None and r.action == "hold_reply":
                    r.reached.set()
                    if not await self._released_or_gone(r, client_r):
                        return
                client_w.write(reply)
                await client_w.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            self._serving.discard(task)
            for w in (client_w, server_w):
                w.close()


async def wait_event(event: threading.Event, timeout: float) -> None:
    """``event.wait`` from a coroutine, without blocking the loop; fails the
    test (AssertionError) if it did not happen in ``timeout`` seconds."""
    ok = await asyncio.get_running_loop().run_in_executor(None, event.wait, timeout)
    if not ok:
        raise AssertionError(f"the proxy's rule was not reached in {timeout}s")
