"""http_client.py - an HTTP/1.1 client for end-to-end specs of the network
tracer, run by Debian's python3: every request on ONE keep-alive connection,
one at a time, each response read whole before the next request.

Usage: http_client.py PORT PROGRESS [--pause SECONDS] PATH...
It sends a GET of each PATH in turn to 127.0.0.1:PORT, waiting SECONDS
(default 0) after each response. To the file PROGRESS
it appends, and flushes, a line "sent K PATH" once the K-th request is
written and "done K STATUS" once its response is read, so that a spec can act
while a response is on its way. It exits 0 when every response came on the
one connection, 1 when the connection had to be opened again.
"""
import http.client
import sys
import time


def main():
    port, progress, paths = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    pause = 0.0
    if paths[:1] == ["--pause"]:
        pause, paths = float(paths[1]), paths[2:]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    first = None
    with open(progress, "a") as out:
        for k, path in enumerate(paths, 1):
            conn.request("GET", path)
            first = first or conn.sock
            if conn.sock is not first:
                sys.exit("request %d went on a new connection" % k)
            out.write("sent %d %s\n" % (k, path))
            out.flush()
            response = conn.getresponse()
            response.read()
            out.write("done %d %d\n" % (k, response.status))
            out.flush()
            time.sleep(pause)
    conn.close()


if __name__ == "__main__":
    main()
