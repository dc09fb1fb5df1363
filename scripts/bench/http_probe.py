"""http_probe.py - measures how the agent's endpoint and main loop answer
while something else loads them: COUNT GET /healthz requests one after
another (100 ms apart), each timed from connect() to the end of the answer,
then RELOADS SIGHUPs, each timed from kill() to the agent's own
"SIGHUP: reloading" log line. Prints one "name value" line per figure.

usage: http_probe.py PORT AGENT_PID AGENT_LOG [COUNT] [RELOADS]
"""

import datetime
import os
import signal
import socket
import sys
import time

TIMEOUT_S = 5.0


def healthz(port):
    """Seconds for one /healthz, or None when it failed or took over TIMEOUT_S."""
    start = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: probe\r\nConnection: close\r\n\r\n")
            got = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += chunk
    except OSError as e:
        sys.stderr.write("healthz: %s after %.1f ms\n" % (e, 1000 * (time.monotonic() - start)))
        return None
    if not got.startswith(b"HTTP/1.1 200"):
        sys.stderr.write("healthz: answered %r\n" % got[:40])
        return None
    return time.monotonic() - start


def log_times(path, needle):
    """Wall-clock times of the log lines containing needle."""
    times = []
    with open(path, "rb") as f:
        for line in f:
            if needle in line:
                stamp = line.split(b" ", 1)[0].decode().rstrip("Z")
                times.append(datetime.datetime.fromisoformat(stamp)
                             .replace(tzinfo=datetime.timezone.utc).timestamp())
    return times


def sighup_delay(pid, log):
    """Seconds from SIGHUP to the agent logging it, or None past TIMEOUT_S."""
    before = len(log_times(log, b"SIGHUP: reloading"))
    sent = time.time()
    os.kill(pid, signal.SIGHUP)
    while time.time() - sent < TIMEOUT_S:
        times = log_times(log, b"SIGHUP: reloading")
        if len(times) > before:
            return max(times[before] - sent, 0.0)
        time.sleep(0.005)
    return None


def quantile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def report(name, samples):
    ok = [s for s in samples if s is not None]
    print("%s_failed %d" % (name, len(samples) - len(ok)))
    if ok:
        print("%s_p50_ms %.1f" % (name, 1000 * quantile(ok, 0.5)))
        print("%s_p95_ms %.1f" % (name, 1000 * quantile(ok, 0.95)))
        print("%s_max_ms %.1f" % (name, 1000 * max(ok)))


def main():
    port, pid, log = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    count = int(sys.argv[4]) if len(sys.argv) > 4 else 50
    reloads = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    samples = []
    for _ in range(count):
        samples.append(healthz(port))
        time.sleep(0.1)
    report("healthz", samples)
    report("sighup", [sighup_delay(pid, log) for _ in range(reloads)])


if __name__ == "__main__":
    main()
