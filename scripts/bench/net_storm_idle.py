"""net_storm_idle.py - holds COUNT idle keep-alive HTTP connections to
127.0.0.1:PORT: opens them, sends one GET on each and reads its answer (so
that a tracer has seen bytes on every one), prints "ready OPEN ANSWERED" once
they are idle, holds them until its standard input ends, then closes them all
and prints "closed". Connections refused or failed are left out, not retried.

usage: net_storm_idle.py PORT COUNT < HOLD_UNTIL_EOF
"""

import resource
import selectors
import socket
import sys
import time

REQUEST = b"GET / HTTP/1.1\r\nHost: storm\r\n\r\n"
TIMEOUT_S = 30.0


def open_all(port, count):
    """count connected sockets (fewer when connects fail), each non-blocking."""
    socks = []
    for _ in range(count):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        try:
            s.settimeout(TIMEOUT_S)
            s.connect(("127.0.0.1", port))
        except OSError:
            s.close()
            continue
        s.setblocking(False)
        socks.append(s)
    return socks


def ask_all(socks):
    """Sends one request on each socket and reads until its head has ended;
    returns how many were answered within TIMEOUT_S."""
    sel = selectors.DefaultSelector()
    for s in socks:
        try:
            s.send(REQUEST)
        except OSError:
            continue
        sel.register(s, selectors.EVENT_READ, b"")
    answered = 0
    deadline = time.monotonic() + TIMEOUT_S
    while sel.get_map() and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1.0):
            try:
                got = key.fileobj.recv(65536)
            except OSError:
                got = b""
            seen = key.data + got
            if not got or b"\r\n\r\n" in seen:
                sel.unregister(key.fileobj)
                answered += 1 if got else 0
            else:
                sel.modify(key.fileobj, selectors.EVENT_READ, seen)
    sel.close()
    return answered


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    port, count = int(sys.argv[1]), int(sys.argv[2])
    want = count + 64
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(want, hard)))
    socks = open_all(port, count)
    answered = ask_all(socks)
    print("ready", len(socks), answered, flush=True)
    sys.stdin.read()
    for s in socks:
        s.close()
    print("closed", flush=True)


if __name__ == "__main__":
    main()
