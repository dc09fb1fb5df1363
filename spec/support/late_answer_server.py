"""late_answer_server.py - an HTTP server that answers each request a while
after reading it, for the network tracer's end-to-end specs of clients that
leave first; run by Debian's python3. One thread per connection: it reads a
request head, waits, writes the response head and body in two sends (the
second one meets the client's reset), and closes. Errors of clients gone
are expected and ignored.

Usage: late_answer_server.py PORT SECONDS
It listens on 127.0.0.1:PORT (a backlog of 1024) until it is stopped.
"""
import socket
import sys
import threading
import time

BODY = b"late\n"


def answer(conn, seconds):
    with conn:
        try:
            data = b""
            while b"\r\n\r\n" not in data:
                piece = conn.recv(4096)
                if not piece:
                    return
                data += piece
            time.sleep(seconds)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(BODY))
            conn.sendall(BODY)
        except OSError:
            pass


def main():
    port, seconds = int(sys.argv[1]), float(sys.argv[2])
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(1024)
    while True:
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=answer, args=(conn, seconds), daemon=True).start()


if __name__ == "__main__":
    main()
