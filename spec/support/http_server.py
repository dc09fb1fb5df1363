"""http_server.py - an HTTP/1.1 server for end-to-end specs of the network
tracer, run by Debian's python3: keep-alive connections, one thread each, and
answers scripted on the command line.

Usage: http_server.py PORT ROUTE...
ROUTE is PATH=STATUS or PATH=STATUS:SECONDS: a GET of PATH is answered with
STATUS and a short body, after SECONDS when given. Any other path gets 404.
It listens on 127.0.0.1:PORT and runs until it is stopped.
"""
import http.server
import sys
import time


def parse_routes(words):
    routes = {}
    for word in words:
        path, answer = word.split("=", 1)
        status, _, seconds = answer.partition(":")
        routes[path] = (int(status), float(seconds or 0))
    return routes


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # the head and the body are two writes
    routes = {}

    def do_GET(self):
        status, seconds = self.routes.get(self.path, (404, 0))
        if seconds:
            time.sleep(seconds)
        body = ("%d %s\n" % (status, self.path)).encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass


def main():
    Handler.routes = parse_routes(sys.argv[2:])
    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
