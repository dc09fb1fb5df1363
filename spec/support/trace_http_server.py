"""trace_http_server.py - an HTTP/1.1 server for the `moonrover trace`
end-to-end specs, whose every response byte is written here (no library
headers): /slow answers after 1 s, /chunked sends a chunked body chunk by
chunk, /big sends 1.5 MiB in 64 KiB writes, /cut sends a head announcing
100000 bytes, 1000 of them, and closes. Keep-alive for the rest.

Usage: trace_http_server.py DIR [THREAD_NAME]. Listens on 127.0.0.1, port
chosen by the kernel, written to DIR/port once listening; for each response,
appends "PATH BYTES" (the bytes written on the wire) to DIR/sent.log. With
THREAD_NAME, it accepts and answers in a thread of that name (the process
keeps its own), as servers with an acceptor thread do."""
import ctypes
import os
import socket
import socketserver
import sys
import threading
import time

DIR = sys.argv[1]
CHUNK = 64 * 1024


def head(status, fields):
    lines = ["HTTP/1.1 " + status] + [k + ": " + v for k, v in fields] + ["", ""]
    return "\r\n".join(lines).encode()


def fixed(status, body):
    return [head(status, [("Content-Type", "text/plain"), ("Content-Length", str(len(body)))]) + body]


def chunked():
    parts = [head("200 OK", [("Content-Type", "text/plain"), ("Transfer-Encoding", "chunked")])]
    for text in (b"hello ", b"chunked ", b"world"):
        parts.append(b"%x\r\n%s\r\n" % (len(text), text))
    parts.append(b"0\r\n\r\n")
    return parts


def big():
    body = bytes(range(256)) * (3 * 2048)
    parts = [head("200 OK", [("Content-Type", "application/octet-stream"), ("Content-Length", str(len(body)))])]
    parts += [body[i:i + CHUNK] for i in range(0, len(body), CHUNK)]
    return parts


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            line = self.rfile.readline()
            if not line:
                return
            while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                pass
            path = line.split()[1].decode()
            close = False
            if path == "/slow":
                time.sleep(1)
                parts = fixed("200 OK", b"slow")
            elif path == "/chunked":
                parts = chunked()
            elif path == "/big":
                parts = big()
            elif path == "/cut":
                parts = [head("200 OK", [("Content-Length", "100000")]) + b"x" * 1000]
                close = True
            else:
                parts = fixed("404 Not Found", b"no such page")
            sent = 0
            for p in parts:
                self.wfile.write(p)
                self.wfile.flush()
                sent += len(p)
            with open(os.path.join(DIR, "sent.log"), "a") as log:
                log.write("%s %d\n" % (path, sent))
            if close:
                self.connection.shutdown(socket.SHUT_RDWR)
                return


class Server(socketserver.TCPServer):
    allow_reuse_address = True


PR_SET_NAME = 15


def serve_named(server, name):
    ctypes.CDLL(None).prctl(PR_SET_NAME, name.encode(), 0, 0, 0)
    server.serve_forever()


def main():
    with Server(("127.0.0.1", 0), Handler) as server:
        tmp = os.path.join(DIR, "port.tmp")
        with open(tmp, "w") as f:
            f.write(str(server.server_address[1]))
        os.rename(tmp, os.path.join(DIR, "port"))
        if len(sys.argv) > 2:
            thread = threading.Thread(target=serve_named, args=(server, sys.argv[2]))
            thread.start()
            thread.join()
        else:
            server.serve_forever()


main()
