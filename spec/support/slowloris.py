"""slowloris.py - a slow HTTP client, for specs and benchmarks of the agent's
endpoint: it opens COUNT connections, sends each the start of a request head
and then one more byte every INTERVAL seconds, never finishing it (with
--silent, nothing at all). With --reopen it opens a new connection for every
one the server closes, as an attacker keeping the pressure on would.

usage: slowloris.py HOST PORT COUNT [--interval S] [--reopen] [--silent]
                    [--status FILE] [--duration S]

Every second (and at the end) it writes to FILE, renamed into place:
  open N        connections open now
  opened N      connections opened so far
  closed N      connections the server closed
  first_closed  the index of the first connection the server closed (-1: none)
  refused N     connections that could not be opened
  sent N        bytes sent
It runs for --duration seconds (default: until killed).
"""

import argparse
import errno
import os
import resource
import selectors
import socket
import time

HEAD = b"GET /healthz HTTP/1.1\r\nHost: slowloris\r\n"
TRICKLE = b"X-Slow: " + b"a" * 4000


def raise_fd_limit(count):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = count + 64
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))


class Client:
    def __init__(self, host, port):
        self.host, self.port = host, port
        self.sel = selectors.DefaultSelector()
        self.conns = {}  # socket -> [index, bytes of TRICKLE sent]
        self.opened = self.closed = self.refused = self.sent = 0
        self.first_closed = -1

    def open_one(self):
        s = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET)
        s.setblocking(False)
        err = s.connect_ex((self.host, self.port))
        if err not in (0, errno.EINPROGRESS):
            s.close()
            self.refused += 1
            return
        self.conns[s] = [self.opened, 0]
        self.opened += 1
        self.sel.register(s, selectors.EVENT_READ)

    def drop(self, s, by_server):
        index = self.conns.pop(s)[0]
        self.sel.unregister(s)
        s.close()
        if by_server:
            self.closed += 1
            if self.first_closed < 0:
                self.first_closed = index

    def trickle(self):
        for s, state in list(self.conns.items()):
            chunk = HEAD if state[1] == 0 else TRICKLE[(state[1] - 1) % len(TRICKLE):][:1]
            try:
                self.sent += s.send(chunk)
                state[1] += 1
            except BlockingIOError:
                pass
            except OSError:
                self.drop(s, True)

    def watch(self, seconds):
        for key, _ in self.sel.select(timeout=seconds):
            s = key.fileobj
            try:
                s.recv(65536)
            except BlockingIOError:
                continue
            except OSError:
                pass
            self.drop(s, True)  # an answer (an error) or the end: either way, closed

    def status(self, path):
        with open(path + ".part", "w") as f:
            f.write("open %d\nopened %d\nclosed %d\nfirst_closed %d\nrefused %d\nsent %d\n"
                    % (len(self.conns), self.opened, self.closed, self.first_closed, self.refused,
                       self.sent))
        os.rename(path + ".part", path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("host")
    p.add_argument("port", type=int)
    p.add_argument("count", type=int)
    p.add_argument("--interval", type=float, default=1.0)
    p.add_argument("--reopen", action="store_true")
    p.add_argument("--silent", action="store_true")
    p.add_argument("--status")
    p.add_argument("--duration", type=float, default=0)
    a = p.parse_args()
    raise_fd_limit(a.count)
    c = Client(a.host, a.port)
    for _ in range(a.count):
        c.open_one()
    start = time.monotonic()
    last_trickle = last_status = 0.0
    while not a.duration or time.monotonic() - start < a.duration:
        now = time.monotonic()
        if not a.silent and now - last_trickle >= a.interval:
            c.trickle()
            last_trickle = now
        if a.status and now - last_status >= 1.0:
            c.status(a.status)
            last_status = now
        c.watch(min(a.interval, 0.05))
        for _ in range(a.count - len(c.conns) if a.reopen else 0):
            c.open_one()
    if a.status:
        c.status(a.status)


if __name__ == "__main__":
    main()
