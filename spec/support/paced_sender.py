"""paced_sender.py - one TCP connection to itself whose client writes in two
phases, for the network tracer's capture specs; run by Debian's python3.
It waits for a line on fifo START, connects and writes HEAD bytes of 'h';
waits for a line on fifo GO, writes PIECES writes of SIZE bytes of 'b' and
then TAIL bytes of 't'; the server end reads every byte, then it exits.

Usage: paced_sender.py START GO HEAD PIECES SIZE TAIL
"""
import socket
import sys


def wait_line(path):
    with open(path) as f:
        f.readline()


def main():
    start, go = sys.argv[1], sys.argv[2]
    head, pieces, size, tail = (int(w) for w in sys.argv[3:7])
    wait_line(start)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    client = socket.create_connection(listener.getsockname())
    server, _ = listener.accept()
    client.sendall(b"h" * head)
    wait_line(go)
    for _ in range(pieces):
        client.sendall(b"b" * size)
    client.sendall(b"t" * tail)
    client.close()
    total = head + pieces * size + tail
    while total > 0:
        data = server.recv(65536)
        if not data:
            break
        total -= len(data)
    server.close()


if __name__ == "__main__":
    main()
