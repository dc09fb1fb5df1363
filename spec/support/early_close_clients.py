"""early_close_clients.py - HTTP clients that leave before their answer, for
the network tracer's end-to-end specs, run by Debian's python3: each sends
one GET and closes its socket without reading; every second one resets it
(SO_LINGER 0) a moment after sending instead of closing it in order.

Usage: early_close_clients.py PORT COUNT WAVE PATH
COUNT clients to 127.0.0.1:PORT, WAVE of them open at a time.
"""
import socket
import struct
import sys
import time

RESET_AFTER_S = 0.01  # the server has read the request by then


def wave(port, count, path, first):
    request = ("GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % path).encode()
    socks = []
    for i in range(count):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(request)
        socks.append((first + i, s))
    time.sleep(RESET_AFTER_S)
    for n, s in socks:
        if n % 2:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()


def main():
    port, count, size, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    for first in range(0, count, size):
        wave(port, min(size, count - first), path, first)


if __name__ == "__main__":
    main()
