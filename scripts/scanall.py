#!/usr/bin/env python3
"""Runs one full PK.SCAN iteration on a sidecar and prints the records seen,
the calls made and the time taken. Used by scripts/bench.sh multi; no client
library needed.

    scripts/scanall.py PORT NAMESPACE COUNT
"""
import socket
import sys
import time


def command(sock, rd, *args):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    sock.sendall(out)
    return reply(rd)


def reply(rd):
    line = rd.readline()
    kind, rest = line[:1], line[1:-2]
    if kind == b"*":
        return [reply(rd) for _ in range(int(rest))]
    if kind == b"$":
        n = int(rest)
        if n < 0:
            return None
        data = rd.read(n + 2)
        return data[:-2]
    if kind == b":":
        return int(rest)
    if kind == b"-":
        raise RuntimeError(rest.decode())
    return rest


def main():
    port, ns, count = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    sock = socket.create_connection(("127.0.0.1", port))
    rd = sock.makefile("rb")
    cursor, calls, seen = b"0", 0, set()
    began = time.monotonic()
    while True:
        cursor, records = command(sock, rd, "PK.SCAN", ns, cursor, "COUNT", count)
        calls += 1
        for r in records:
            seen.add(r[0])
        if cursor == b"0":
            break
    took = time.monotonic() - began
    print("%d records in %d calls, %.2f s" % (len(seen), calls, took))


main()
