"""grpc_echo.py - a tiny gRPC server for the transport's specs (raw bytes, no
protobuf). Run it with /usr/bin/python3 (Debian's python3-grpcio).

Methods of /test.Echo:
  Unary   returns the request
  Stream  client streaming: returns the messages joined in order
  Fail    aborts with the status in the request: b"CODE details"
  Slow    reads nothing and waits until the call ends (the client's
          deadline); messages sent to it stall once flow control's window is full
  Auth    returns the value of the "authentication" header (b"" when none)

Options: --port N (0: any; the chosen port is printed on stdout), --tls CERT
KEY for TLS, --client-ca CA to require client certificates (mTLS).
It listens on 127.0.0.1 only and stops on SIGTERM or SIGINT.
"""
import argparse
import os
import signal
import sys
import threading
from concurrent import futures

import grpc

SLOW_LIMIT_S = 30


def unary(request, context):
    return request


def stream(request_iterator, context):
    return b"".join(request_iterator)


def fail(request, context):
    code_text, _, details = request.decode().partition(" ")
    code = next(c for c in grpc.StatusCode if c.value[0] == int(code_text))
    context.abort(code, details)


def slow(request_iterator, context):
    done = threading.Event()
    context.add_callback(done.set)
    done.wait(SLOW_LIMIT_S)
    return b""


def auth(request, context):
    for key, value in context.invocation_metadata():
        if key == "authentication":
            return value.encode()
    return b""


def handlers():
    u = grpc.unary_unary_rpc_method_handler
    return grpc.method_handlers_generic_handler("test.Echo", {
        "Unary": u(unary),
        "Stream": grpc.stream_unary_rpc_method_handler(stream),
        "Fail": u(fail),
        "Slow": grpc.stream_unary_rpc_method_handler(slow),
        "Auth": u(auth),
    })


def read(path):
    with open(path, "rb") as f:
        return f.read()


def listen(server, args):
    address = "127.0.0.1:%d" % args.port
    if not args.tls:
        return server.add_insecure_port(address)
    cert, key = args.tls
    ca = read(args.client_ca) if args.client_ca else None
    creds = grpc.ssl_server_credentials([(read(key), read(cert))], root_certificates=ca,
                                        require_client_auth=ca is not None)
    return server.add_secure_port(address, creds)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"))
    parser.add_argument("--client-ca", metavar="CA")
    args = parser.parse_args()

    # Blocked before any thread starts, so every thread inherits the mask
    # and sigwait below takes the signal at once.
    stop_signals = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stop_signals)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    server.add_generic_rpc_handlers((handlers(),))
    port = listen(server, args)
    if port == 0:
        sys.exit("cannot listen on 127.0.0.1:%d" % args.port)
    server.start()
    print(port, flush=True)
    signal.sigwait(stop_signals)
    server.stop(0).wait()
    # The interpreter's own exit waits seconds for gRPC's threads; there is
    # nothing left to flush, so leave now.
    os._exit(0)


if __name__ == "__main__":
    main()
