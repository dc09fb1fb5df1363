"""Watch requests: the events of one resource, from a resourceVersion on,
filtered by namespace and selectors as kube-apiserver filters them (an
object that starts or stops matching is ADDED or DELETED), with BOOKMARK
events when asked for, an ERROR event with a 410 Status for a version older
than the compacted history, and an end at timeoutSeconds or when the spec
drops every watch."""
import select
import time

import resources
from listing import in_scope


class Watch:
    """One watch's position in the store's history and what ends it."""

    def __init__(self, store, route, matches, query):
        self.store, self.route, self.matches = store, route, matches
        self.reset = False
        self.bookmarks = query.get("allowWatchBookmarks") in ("1", "true")
        timeout = query.get("timeoutSeconds")
        self.deadline = time.monotonic() + int(timeout) if timeout else None
        self.index, self.counted = None, False
        with store.cond:
            self.drops, self.bookmark_seen = store.drops, store.bookmarks

    def _count(self, delta):
        with self.store.cond:
            self.store.watches += delta
            self.counted = delta > 0

    def close(self):
        """No longer counted as open (the watch ends; safe to call twice)."""
        if self.counted:
            self._count(-1)

    def start(self, rv_text):
        """The first events: the objects that exist (no resourceVersion, or
        "0"), nothing (a version still in the history), or one ERROR event
        (a version compacted away: the stream then ends). Sets the position;
        from then on the watch counts as open."""
        state = self.store.state()
        self._count(1)
        if rv_text in ("", "0"):
            self.index = self.store.first_after(state["resourceVersion"])
            objects = self.store.snapshot(self.route.resource, state["resourceVersion"])
            return [event("ADDED", obj) for _, obj in sorted(objects.items())
                    if in_scope(self.route, obj) and self.matches(obj)]
        rv = int(rv_text)
        if rv < state["compacted"]:
            message = "too old resource version: %d (%d)" % (rv, state["compacted"])
            return [event("ERROR", resources.expired(message))]
        self.index = self.store.first_after(rv)
        return []

    def next_events(self, client_gone):
        """Waits for the next events to send; None when the watch ends, with
        self.reset telling whether to close the connection without a clean
        end. A watch dropped or timed out first sends the events of what
        changed before, so that a spec knows what it received."""
        with self.store.cond:
            while True:
                dropped = self.store.drops != self.drops
                self.reset = dropped and self.store.drop_reset
                ending = dropped or self._timed_out()
                if client_gone():
                    return None
                out = self._changes() + self._bookmark()
                if out:
                    return out
                if ending:
                    return None
                self.store.cond.wait(self._wait_time())

    def _timed_out(self):
        return self.deadline is not None and time.monotonic() >= self.deadline

    def _wait_time(self):
        left = 1.0 if self.deadline is None else self.deadline - time.monotonic()
        return max(0.0, min(1.0, left))

    def _changes(self):
        log, out = self.store.log, []
        for entry in log[self.index:]:
            if entry["resource"] == self.route.resource:
                one = self._transition(entry)
                if one:
                    out.append(one)
        self.index = len(log)
        return out

    def _transition(self, entry):
        """The event a change makes for this watch, or None."""
        new = entry["object"] if entry["type"] != "DELETED" else None
        now = new is not None and in_scope(self.route, new) and self.matches(new)
        old = entry["old"]
        before = old is not None and in_scope(self.route, old) and self.matches(old)
        if now:
            return event("MODIFIED" if before else "ADDED", new)
        if before:
            return event("DELETED", entry["object"])
        return None

    def _bookmark(self):
        if self.store.bookmarks == self.bookmark_seen:
            return []
        self.bookmark_seen = self.store.bookmarks
        if not self.bookmarks:
            return []
        version, kind, _ = resources.RESOURCES[self.route.resource]
        meta = {"resourceVersion": str(self.store.rv)}
        return [event("BOOKMARK", {"kind": kind, "apiVersion": version, "metadata": meta})]


def event(kind, obj):
    return {"type": kind, "object": obj}


def peer_closed(sock):
    """Whether the client has sent anything (or closed) during a watch: a
    watch client sends nothing more, so the stand-in takes it as gone."""
    readable, _, _ = select.select([sock], [], [], 0)
    return bool(readable)
