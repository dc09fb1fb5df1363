"""The API server's request handler: authentication (a client certificate
the server verified, else the bearer token), get, list and watch of the
resources in resources.py, each request recorded with how it was
authorized. Errors are Status objects with the codes kube-apiserver uses."""
import json
import socket
import urllib.parse
from http.server import BaseHTTPRequestHandler

import listing
import resources
import routes
import matchers
from watch import Watch, peer_closed


UNAUTHORIZED = resources.status(401, "Unauthorized", "Unauthorized")


class ApiHandler(BaseHTTPRequestHandler):
    """Serves one connection; self.server has store and recorder."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        """Requests go to the record file, not to stderr."""

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
        self.auth = self._authorization()
        if self.auth is None:
            return self._finish(url, query, UNAUTHORIZED)
        route = routes.parse(url.path)
        if route is None:
            body = resources.status(404, "NotFound", "the server could not find the requested resource")
            return self._finish(url, query, body)
        if route.name is not None:
            return self._finish(url, query, self._get(route))
        try:
            matches = matchers.predicate(route.resource, query.get("fieldSelector"), query.get("labelSelector"))
        except ValueError as exc:
            return self._finish(url, query, resources.status(400, "BadRequest", str(exc)))
        if query.get("watch") in ("1", "true"):
            return self._watch(url, query, route, matches)
        try:
            body = listing.page(self.server.store, route, matches, query)
        except listing.ListError as exc:
            body = exc.body
        return self._finish(url, query, body)

    def _authorization(self):
        """How the request is authorized: "certificate" when the client gave
        one the server verified (as kube-apiserver, whose x509 authenticator
        comes before the token's, takes its CN for the user), else "token"
        with the current bearer token; None: 401."""
        if self.connection.getpeercert():
            return "certificate"
        if self.headers.get("Authorization") == "Bearer " + self.server.store.state()["token"]:
            return "token"
        return None

    def _refuse(self):
        """Any method but GET: 405 (401 first without the token). The body is
        not read, so the connection closes after the answer."""
        self.close_connection = True
        url = urllib.parse.urlsplit(self.path)
        self.auth = self._authorization()
        if self.auth is None:
            return self._finish(url, {}, UNAUTHORIZED)
        return self._finish(url, {}, resources.status(405, "MethodNotAllowed", "the stand-in serves GET only"))

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _refuse

    def _get(self, route):
        obj = self.server.store.get(route.resource, listing.get_key(route))
        return obj if obj is not None else resources.not_found(route.resource, route.name)

    def _finish(self, url, query, body):
        """Answers with a JSON body (a Status's code, else 200) and records it
        with self.auth."""
        code = body.get("code", 200) if body.get("kind") == "Status" else 200
        self.server.recorder.write(self.command, url.path, query, self.auth, code)
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _watch(self, url, query, route, matches):
        rv_text = query.get("resourceVersion", "")
        try:
            listing.parse_int("resourceVersion", rv_text or "0")
            listing.parse_int("timeoutSeconds", query.get("timeoutSeconds") or "0")
        except listing.ListError as exc:
            return self._finish(url, query, exc.body)
        self.server.recorder.write(self.command, url.path, query, self.auth, 200)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        watch = Watch(self.server.store, route, matches, query)
        try:
            self._stream(watch, rv_text)
        except OSError:
            # The client went away (or TLS failed): nothing more to send.
            self.close_connection = True
        finally:
            watch.close()

    def _stream(self, watch, rv_text):
        """Sends the events, one chunk each, until the watch ends."""
        events = watch.start(rv_text)
        while events is not None:
            for one in events:
                data = json.dumps(one).encode() + b"\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            events = watch.next_events(lambda: peer_closed(self.connection)) if watch.index is not None else None
        self.close_connection = True
        watch.close()
        if watch.reset:
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self.wfile.write(b"0\r\n\r\n")
