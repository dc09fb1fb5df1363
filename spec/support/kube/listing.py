"""List requests: which resourceVersion a list is served at (its
resourceVersion and resourceVersionMatch parameters, or its continue
token), limit/continue paging in key order, and the 410 and 504 answers a
real API server gives to versions it no longer has or does not have yet."""
import base64
import binascii
import json

import resources
from store import object_key


class ListError(Exception):
    """A list the server refuses: code and Status object."""

    def __init__(self, body):
        super().__init__(body["message"])
        self.code, self.body = body["code"], body


def encode_continue(rv, key):
    """An opaque continue token: the list's resourceVersion and the last key served."""
    text = json.dumps({"rv": rv, "start": key}).encode()
    return base64.urlsafe_b64encode(text).decode()


def decode_continue(token):
    try:
        data = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise ListError(resources.status(400, "BadRequest", "invalid continue token")) from exc


def parse_int(name, text):
    """A whole-number parameter; a 400 for anything else."""
    try:
        return int(text)
    except ValueError as exc:
        raise ListError(resources.status(400, "BadRequest", 'invalid %s "%s"' % (name, text))) from exc


def served_at(store, query):
    """(resourceVersion to serve the list at, key to start after)."""
    state = store.state()
    current, compacted = state["resourceVersion"], state["compacted"]
    if query.get("continue"):
        rv, start = decode_continue(query["continue"])
        if rv < compacted:
            body = resources.expired("the continue token is older than the compacted history; "
                                     "list again, or go on inconsistently with this response's token")
            body["metadata"]["continue"] = encode_continue(current, start)
            raise ListError(body)
        return rv, start
    text, match = query.get("resourceVersion", ""), query.get("resourceVersionMatch", "")
    if text in ("", "0"):
        return current, ""
    rv = parse_int("resourceVersion", text)
    if rv > current:
        raise ListError(resources.status(504, "Timeout", "Too large resource version: %d, current: %d"
                                         % (rv, current)))
    exact = match == "Exact" or (match == "" and query.get("limit"))
    if exact and rv < compacted:
        raise ListError(resources.expired("too old resource version: %d (%d)" % (rv, compacted)))
    return (rv if exact else current), ""


def page(store, route, matches, query):
    """The list object answering a list request; raises ListError."""
    rv, start = served_at(store, query)
    limit = parse_int("limit", query.get("limit") or "0")
    objects = store.snapshot(route.resource, rv)
    keys = sorted(k for k, obj in objects.items() if k > start and in_scope(route, obj) and matches(obj))
    shown = keys[:limit] if limit > 0 else keys
    version, kind, _ = resources.RESOURCES[route.resource]
    meta = {"resourceVersion": str(rv)}
    if len(shown) < len(keys):
        meta["continue"] = encode_continue(rv, shown[-1])
        if not query.get("fieldSelector") and not query.get("labelSelector"):
            meta["remainingItemCount"] = len(keys) - len(shown)
    return {"kind": kind + "List", "apiVersion": version, "metadata": meta,
            "items": [list_item(objects[k]) for k in shown]}


def in_scope(route, obj):
    """Whether an object is in the namespace of the request (all when none)."""
    return route.namespace is None or obj["metadata"].get("namespace") == route.namespace


def list_item(obj):
    """An object as a list's item: the API server leaves out kind and apiVersion."""
    item = dict(obj)
    item.pop("kind", None)
    item.pop("apiVersion", None)
    return item


def get_key(route):
    return object_key(route.resource, route.namespace or "", route.name)
