"""The control endpoint specs drive the stand-in through (plain HTTP on a
second port of 127.0.0.1, POST with JSON in and out): put and delete objects, rotate
the token, compact the history, drop every watch, ask for a bookmark, read
the counters."""
import json
from http.server import BaseHTTPRequestHandler

import resources


class ControlHandler(BaseHTTPRequestHandler):
    """One control request; self.server.store is the API server's store."""

    def log_message(self, *_):
        """Control requests are not recorded."""

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the body must be a JSON object")
            handler = ACTIONS.get(self.path)
            if handler is None:
                return self._answer(404, {"error": "no such control path: " + self.path})
            return self._answer(*handler(self.server.store, body))
        except ValueError as exc:
            return self._answer(400, {"error": str(exc)})

    def _answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def put(store, body):
    return 200, store.put(body)


def delete(store, body):
    resource = resources.KIND_RESOURCE.get(body.get("kind"))
    if resource is None or not body.get("name"):
        raise ValueError("delete needs a known kind and a name")
    gone = store.delete(resource, body.get("namespace") or "default", body["name"])
    if gone is None:
        return 404, {"error": "no %s %s/%s" % (body["kind"], body.get("namespace"), body["name"])}
    return 200, gone


def token(store, body):
    if not isinstance(body.get("token"), str) or not body["token"]:
        raise ValueError("token needs a non-empty string")
    store.set_token(body["token"])
    return 200, store.state()


def compact(store, _):
    store.compact()
    return 200, store.state()


def drop_watches(store, body):
    return 200, {"dropped": store.drop_watches(bool(body.get("reset")))}


def bookmark(store, _):
    return 200, {"watches": store.request_bookmark()}


def state(store, _):
    return 200, store.state()


ACTIONS = {"/objects": put, "/delete": delete, "/token": token, "/compact": compact,
           "/drop-watches": drop_watches, "/bookmark": bookmark,
           "/state": state}
