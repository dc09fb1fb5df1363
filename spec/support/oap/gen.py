"""Generates and imports the Python protobuf and gRPC modules for moonrover's
SkyWalking protocol definitions (proto/skywalking), at run time.

Nothing generated is committed. The stand-in OAP (oap_stub.py) and its test
client (client_check.py) call load(), which runs protoc with Debian's gRPC
Python plugin into a fresh temporary directory (removed when the process
exits) and returns the modules. By hand, `/usr/bin/python3 gen.py OUTDIR`
writes the modules into OUTDIR.
"""
import atexit
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", "proto", "skywalking"))
PROTOC = "/usr/bin/protoc"
GRPC_PLUGIN = "/usr/bin/grpc_python_plugin"

# Attribute name on the namespace load() returns -> generated module.
MODULES = {
    "common": "common.Common_pb2",
    "command": "common.Command_pb2",
    "process": "ebpf.profiling.Process_pb2",
    "process_grpc": "ebpf.profiling.Process_pb2_grpc",
    "profile": "ebpf.profiling.Profile_pb2",
    "profile_grpc": "ebpf.profiling.Profile_pb2_grpc",
    "continuous": "ebpf.profiling.Continuous_pb2",
    "continuous_grpc": "ebpf.profiling.Continuous_pb2_grpc",
    "meter": "language_agent.Meter_pb2",
    "meter_grpc": "language_agent.Meter_pb2_grpc",
    "logging": "logging.Logging_pb2",
    "logging_grpc": "logging.Logging_pb2_grpc",
    "tracing": "language_agent.Tracing_pb2",
    "tracing_grpc": "language_agent.Tracing_pb2_grpc",
}


def proto_files():
    """The .proto files under PROTO_ROOT, as paths relative to it."""
    found = []
    for dirpath, _, names in os.walk(PROTO_ROOT):
        for name in names:
            if name.endswith(".proto"):
                found.append(os.path.relpath(os.path.join(dirpath, name), PROTO_ROOT))
    return sorted(found)


def generate(outdir):
    """Writes the *_pb2.py and *_pb2_grpc.py modules into outdir."""
    subprocess.run([PROTOC, "--proto_path=" + PROTO_ROOT, "--python_out=" + outdir,
                    "--grpc_out=" + outdir, "--plugin=protoc-gen-grpc=" + GRPC_PLUGIN]
                   + proto_files(), check=True)


def import_generated(outdir, name):
    """Imports one generated module from its file. Python would find the
    stdlib's logging package before the generated logging/ directory, so
    every module is loaded by path and entered in sys.modules under its
    dotted name, where the generated modules' own imports find it (MODULES
    lists each module after those it imports)."""
    path = os.path.join(outdir, *name.split(".")) + ".py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load():
    """Generates into a temporary directory and imports the modules; returns
    them as attributes (the keys of MODULES)."""
    outdir = tempfile.mkdtemp(prefix="moonrover-oap-stubs.")
    atexit.register(shutil.rmtree, outdir, True)
    generate(outdir)
    sys.path.insert(0, outdir)
    return types.SimpleNamespace(**{attr: import_generated(outdir, name)
                                    for attr, name in MODULES.items()})


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: gen.py OUTDIR")
    generate(sys.argv[1])
