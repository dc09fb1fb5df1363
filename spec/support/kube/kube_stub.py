"""A stand-in Kubernetes API server for moonrover's specs.

It serves, over HTTPS on 127.0.0.1 with a bearer token (or, with
--client-ca, a client certificate that CA signed), get, list and watch
of nodes, pods, services and the owners of pods (ReplicaSet, Deployment,
StatefulSet, DaemonSet, Job, CronJob) as kube-apiserver does: one
resourceVersion counter, list paging, field and label selectors, chunked
watch events with bookmarks, 410 for versions older than the compacted
history. A second port takes the spec's changes (control.py). Every answered
request is a line of the --requests file; the objects, their history and the
token live in the --state file, so that a stand-in started again with it
serves the same objects and versions.

It prints "port N control M" on one stdout line once it serves; SIGTERM (or
SIGINT) stops it with exit status 0. README.md describes it.
"""
import argparse
import signal
import ssl
import sys
import threading
from http.server import ThreadingHTTPServer

from api import ApiHandler
from control import ControlHandler
from record import Recorder
from store import Store


class Server(ThreadingHTTPServer):
    """An HTTP server whose handlers share the store (and the recorder)."""

    daemon_threads = True

    def handle_error(self, request, client_address):
        print("kube_stub: a connection from %s:%d failed: %s"
              % (client_address[0], client_address[1], sys.exc_info()[1]), file=sys.stderr, flush=True)


def parse_args(argv):
    p = argparse.ArgumentParser(description="stand-in Kubernetes API server for moonrover specs")
    p.add_argument("--port", type=int, default=0, help="HTTPS port on 127.0.0.1 (0: any free port)")
    p.add_argument("--control-port", type=int, default=0, help="control port on 127.0.0.1 (0: any)")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), required=True, help="PEM certificate and key")
    p.add_argument("--token", required=True, help="the bearer token (unless --state has one)")
    p.add_argument("--client-ca", metavar="CA", help="also authorize requests by a client certificate CA signed")
    p.add_argument("--state", required=True, help="the objects and history, read at start, kept up to date")
    p.add_argument("--requests", required=True, help="JSON-lines file of the requests answered (appended)")
    return p.parse_args(argv)


def api_server(args, store, recorder):
    server = Server(("127.0.0.1", args.port), ApiHandler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(args.tls[0], args.tls[1])
    if args.client_ca:
        # As kube-apiserver: a client certificate is asked for, not required
        # (a token still does), and one the CA did not sign fails the handshake.
        context.load_verify_locations(args.client_ca)
        context.verify_mode = ssl.CERT_OPTIONAL
    server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    server.store, server.recorder = store, recorder
    return server


def serve(args):
    """Runs both servers until SIGTERM or SIGINT."""
    store = Store(args.state, args.token)
    recorder = Recorder(args.requests)
    try:
        api = api_server(args, store, recorder)
        control = Server(("127.0.0.1", args.control_port), ControlHandler)
    except OSError as exc:
        sys.exit("kube_stub: cannot serve: %s" % exc)
    control.store = store
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    for server in (api, control):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    print("port %d control %d" % (api.server_address[1], control.server_address[1]), flush=True)
    stop.wait()
    for server in (api, control):
        server.shutdown()
        server.server_close()
    recorder.close()


if __name__ == "__main__":
    serve(parse_args(sys.argv[1:]))
