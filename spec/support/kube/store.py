"""The stand-in API server's objects, as etcd holds them: one resourceVersion
counter for every write, the history of every change (what watches and
consistent lists read), the compaction point below which that history is
gone, the bearer token, and a state file that carries all of it across a
restart. Watches wait on the store's condition for changes, drops and
bookmark requests."""
import copy
import datetime
import json
import os
import threading
import uuid

import resources


def now_rfc3339():
    """The time as metadata timestamps carry it (UTC, whole seconds)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def object_key(resource, namespace, name):
    """The key an object is stored and listed under: "ns/name", or "name"."""
    return namespace + "/" + name if resources.RESOURCES[resource][2] else name


def in_server_order(obj):
    """The object with its keys in the order the API server writes them."""
    first = {k: obj[k] for k in ("kind", "apiVersion", "metadata", "spec", "status") if k in obj}
    return dict(first, **obj)


class Store:
    """Objects, history and server state; every method takes the lock."""

    def __init__(self, path, token):
        self.path = path
        self.cond = threading.Condition()
        self.rv, self.compacted, self.token, self.log = 1, 0, token, []
        self.objects = {resource: {} for resource in resources.RESOURCES}
        self.drops, self.drop_reset, self.bookmarks, self.watches = 0, False, 0, 0
        if os.path.exists(path):
            self._load()

    def _load(self):
        with open(self.path, encoding="utf-8") as fh:
            saved = json.load(fh)
        self.rv, self.compacted, self.token, self.log = (
            saved["rv"], saved["compacted"], saved["token"], saved["log"])
        for entry in self.log:
            self._apply(self.objects[entry["resource"]], entry)

    def _save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump({"rv": self.rv, "compacted": self.compacted, "token": self.token,
                       "log": self.log}, fh)
        os.replace(tmp, self.path)

    @staticmethod
    def _apply(objects, entry):
        if entry["type"] == "DELETED":
            objects.pop(entry["key"], None)
        else:
            objects[entry["key"]] = entry["object"]

    def _record(self, resource, kind, key, obj, old):
        self.log.append({"rv": self.rv, "type": kind, "resource": resource, "key": key,
                         "object": obj, "old": old})
        self._apply(self.objects[resource], self.log[-1])
        self._save()
        self.cond.notify_all()

    def put(self, obj):
        """Adds an object or replaces the one of the same name (a MODIFIED
        event); fills apiVersion, namespace, uid, creationTimestamp and
        resourceVersion as the API server would. Returns the stored object,
        or raises ValueError for an object the server would refuse."""
        resource = resources.KIND_RESOURCE.get(obj.get("kind"))
        meta = obj.get("metadata") or {}
        if resource is None or not meta.get("name"):
            raise ValueError("an object needs a known kind and metadata.name")
        version, _, namespaced = resources.RESOURCES[resource]
        obj = in_server_order(dict(copy.deepcopy(obj), apiVersion=version))
        meta = obj.setdefault("metadata", {})
        if namespaced:
            meta.setdefault("namespace", "default")
        else:
            meta.pop("namespace", None)
        with self.cond:
            key = object_key(resource, meta.get("namespace", ""), meta["name"])
            old = self.objects[resource].get(key)
            meta.setdefault("uid", old["metadata"]["uid"] if old else str(uuid.uuid4()))
            meta.setdefault("creationTimestamp",
                            old["metadata"]["creationTimestamp"] if old else now_rfc3339())
            self.rv += 1
            meta["resourceVersion"] = str(self.rv)
            self._record(resource, "MODIFIED" if old else "ADDED", key, obj, old)
            return copy.deepcopy(obj)

    def delete(self, resource, namespace, name):
        """Deletes an object (a DELETED event carrying its last state at the
        deletion's resourceVersion); returns that state, or None if absent."""
        with self.cond:
            key = object_key(resource, namespace, name)
            old = self.objects[resource].get(key)
            if old is None:
                return None
            self.rv += 1
            gone = copy.deepcopy(old)
            gone["metadata"]["resourceVersion"] = str(self.rv)
            self._record(resource, "DELETED", key, gone, old)
            return copy.deepcopy(gone)

    def get(self, resource, key):
        """The current object under key, or None."""
        with self.cond:
            return copy.deepcopy(self.objects[resource].get(key))

    def snapshot(self, resource, rv):
        """The objects of a resource as they were at rv (key -> object)."""
        with self.cond:
            if rv >= self.rv:
                return copy.deepcopy(self.objects[resource])
            objects = {}
            for entry in self.log:
                if entry["rv"] > rv:
                    break
                if entry["resource"] == resource:
                    self._apply(objects, entry)
            return copy.deepcopy(objects)

    def first_after(self, rv):
        """The index in the log of the first change newer than rv."""
        with self.cond:
            return next((i for i, e in enumerate(self.log) if e["rv"] > rv), len(self.log))

    def set_token(self, token):
        with self.cond:
            self.token = token
            self._save()

    def compact(self):
        """Forgets the history up to now: older resourceVersions become too old."""
        with self.cond:
            self.compacted = self.rv
            self._save()
            return self.compacted

    def drop_watches(self, reset):
        """Ends every open watch: cleanly, or (reset) by closing its connection."""
        with self.cond:
            self.drops += 1
            self.drop_reset = reset
            self.cond.notify_all()
            return self.watches

    def request_bookmark(self):
        """Makes every open watch that allows bookmarks send one now."""
        with self.cond:
            self.bookmarks += 1
            self.cond.notify_all()
            return self.watches

    def state(self):
        """The server's counters, for the control endpoint."""
        with self.cond:
            return {"resourceVersion": self.rv, "compacted": self.compacted,
                    "watches": self.watches, "token": self.token}
