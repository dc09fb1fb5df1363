"""The record of every request the stand-in API server answered: one JSON
line each, which the Lua driver reads (spec/support/kube_api.lua)."""
import json
import threading
import time


class Recorder:
    """Appends request lines to a file, one writer at a time."""

    def __init__(self, path):
        self._file = open(path, "a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, method, path, query, auth, code):
        """One request: query is a dict of its parameters (last value wins);
        auth how it was authorized ("token", "certificate"), None for a 401
        (the line then has no "auth")."""
        record = {"time": time.time_ns() // 1_000_000, "method": method, "path": path, "query": query,
                  "authorized": auth is not None, "code": code}
        if auth is not None:
            record["auth"] = auth
        line = json.dumps(record)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def close(self):
        self._file.close()
