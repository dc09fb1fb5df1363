"""idle_clients.py - holds many idle keep-alive HTTP connections open.

usage: idle_clients.py PORT COUNT READY_FILE SECONDS

Opens COUNT connections to 127.0.0.1:PORT (raising its open-files limit
first; fewer when its hard limit is lower), sends one GET on each and reads its answer, writes how many to
READY_FILE, then holds them all idle for SECONDS and closes them."""
import resource
import socket
import sys
import time

REQUEST = b"GET / HTTP/1.1\r\nHost: storm\r\n\r\n"


def main():
    port, count, ready, seconds = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY:
        count = min(count, hard - 512)
    resource.setrlimit(resource.RLIMIT_NOFILE, (count + 256, hard))
    conns = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(REQUEST)
        conns.append(s)
    for s in conns:
        s.recv(4096)
    with open(ready, "w") as f:
        f.write(str(len(conns)))
    time.sleep(seconds)
    for s in conns:
        s.close()


main()
