"""A stand-in SkyWalking OAP backend for moonrover's end-to-end tests.

It serves the two gRPC services an eBPF agent uses for on-demand profiling,
EBPFProcessService and EBPFProfilingService, on 127.0.0.1, from Python
modules generated at start from proto/skywalking (see gen.py). It:

- records every call it receives as JSON lines (--record FILE): one line per
  request message (per streamed message for collectProfilingData) and one
  per rejected call;
- answers reportProcesses with a stable process id per reported process;
- answers keepAlive and collectProfilingData with empty Commands;
- answers queryTasks from a task file the test writes and may rewrite at any
  time (--tasks FILE), encoding each task as OAP encodes an
  "EBPFProfilingTaskQuery" command;
- optionally serves TLS (--tls CERT KEY) and requires an "authentication"
  metadata value (--auth TOKEN), rejecting other calls with UNAUTHENTICATED.

With --port 0 the kernel picks the port; either way the stub prints
"port N" on one line on stdout once it serves. SIGTERM (or SIGINT) stops it
cleanly with exit status 0. README.md describes the record and task formats.
"""
import argparse
import base64
import concurrent.futures
import hashlib
import json
import os
import signal
import sys
import threading
import time
import uuid

import grpc
from google.protobuf import json_format

import gen

COMMAND_NAME = "EBPFProfilingTaskQuery"


def parse_args(argv):
    """Command-line options."""
    p = argparse.ArgumentParser(description="stand-in SkyWalking OAP for moonrover tests")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    p.add_argument("--record", required=True, help="JSON-lines file of what the stub receives")
    p.add_argument("--tasks", help="JSON file with the profiling tasks queryTasks returns")
    p.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve TLS with this PEM pair")
    p.add_argument("--auth", help="require this value in the 'authentication' metadata")
    return p.parse_args(argv)


def now_ms():
    """Wall-clock time, epoch milliseconds."""
    return time.time_ns() // 1_000_000


def message_dict(message):
    """A message as proto3 JSON (proto field names, defaults included; int64
    values are strings, enums are names)."""
    return json_format.MessageToDict(message, preserving_proto_field_name=True,
                                     including_default_value_fields=True)


def metadata_dict(context):
    """The call's metadata; binary ("-bin") values base64-encoded."""
    out = {}
    for key, value in context.invocation_metadata():
        out[key] = value if isinstance(value, str) else base64.b64encode(value).decode()
    return out


class Calls:
    """Admits calls (checking the token) and records them as JSON lines."""

    def __init__(self, record_path, token):
        self._file = open(record_path, "a", encoding="utf-8")
        self._token = token
        self._lock = threading.Lock()
        self._count = 0

    def admit(self, rpc, context):
        """Returns a new call number, or records the rejection and aborts the
        call with UNAUTHENTICATED when the token is required and missing."""
        with self._lock:
            self._count += 1
            call = self._count
        if self._token is not None and metadata_dict(context).get("authentication") != self._token:
            self._write(rpc, call, context, {"rejected": "UNAUTHENTICATED"})
            context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong authentication")
        return call

    def record(self, rpc, call, context, message, seq=None):
        """Records one received message (seq: its index in a stream)."""
        extra = {"message": message_dict(message)}
        if seq is not None:
            extra["seq"] = seq
        self._write(rpc, call, context, extra)

    def _write(self, rpc, call, context, extra):
        line = {"rpc": rpc, "call": call, "time": now_ms(), "metadata": metadata_dict(context)}
        line.update(extra)
        with self._lock:
            self._file.write(json.dumps(line, separators=(",", ":")) + "\n")
            self._file.flush()

    def close(self):
        """Closes the record file."""
        self._file.close()


def process_id(entity):
    """The id of a process entity. Like OAP's, it is derived from the service,
    instance and process names only, so it is the same on every report and
    across stub restarts."""
    key = "\0".join((entity.serviceName, entity.instanceName, entity.processName))
    return hashlib.sha256(key.encode()).hexdigest()


class Registry:
    """The processes each agent reported or kept alive: entity and latest
    properties (keepAlive replaces the properties, as OAP does)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._agents = {}

    def put(self, agent_id, entity, properties):
        """Stores or updates one process; returns its id."""
        proc_id = process_id(entity)
        entry = {"entity": entity, "properties": {kv.key: kv.value for kv in properties}}
        with self._lock:
            self._agents.setdefault(agent_id, {})[proc_id] = entry
        return proc_id

    def of_agent(self, agent_id):
        """(process id, entry) pairs of one agent's processes."""
        with self._lock:
            return list(self._agents.get(agent_id, {}).items())


def downstream_of(pb, properties, registry, agent_id):
    """The EBPFProcessDownstream answering one reported process."""
    kind = properties.WhichOneof("metadata")
    meta = getattr(properties, kind)
    proc_id = registry.put(agent_id, meta.entity, meta.properties)
    echo_type = (pb.process.EBPFHostProcessDownstream if kind == "hostProcess"
                 else pb.process.EBPFKubernetesProcessDownstream)
    echo = echo_type(pid=meta.pid, entityMetadata=meta.entity)
    return pb.process.EBPFProcessDownstream(processId=proc_id, **{kind: echo})


class ProcessService:
    """EBPFProcessService: process registration and keep-alive."""

    def __init__(self, pb, calls, registry):
        self._pb, self._calls, self._registry = pb, calls, registry

    def reportProcesses(self, request, context):
        call = self._calls.admit("reportProcesses", context)
        self._calls.record("reportProcesses", call, context, request)
        answers = [downstream_of(self._pb, p, self._registry, request.ebpfAgentID)
                   for p in request.processes if p.WhichOneof("metadata")]
        return self._pb.process.EBPFReportProcessDownstream(processes=answers)

    def keepAlive(self, request, context):
        call = self._calls.admit("keepAlive", context)
        self._calls.record("keepAlive", call, context, request)
        for ping in request.processes:
            self._registry.put(request.ebpfAgentID, ping.entityMetadata, ping.properties)
        return self._pb.command.Commands()


def read_tasks(path):
    """The task objects in the task file (none when there is no file)."""
    if not path or not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        tasks = json.load(f)
    if not isinstance(tasks, list):
        raise ValueError("the task file must hold a JSON list")
    return tasks


def matches_service(task, entry):
    """Whether a process (registry entry) is one OAP would give the task
    naming a service: same service (and instance, when named), the task's
    labels all among the process's, and for ON_CPU/OFF_CPU the process marked
    as profilable."""
    entity = entry["entity"]
    if entity.serviceName != task["serviceName"]:
        return False
    if task.get("instanceName") not in (None, entity.instanceName):
        return False
    if not set(task.get("labels", [])) <= set(entity.labels):
        return False
    return (task.get("targetType", "ON_CPU") == "NETWORK"
            or entry["properties"].get("support_ebpf_profiling") == "true")


def task_process_groups(task, processes):
    """The process id lists to send one command each for: one per process for
    ON_CPU/OFF_CPU, all together for NETWORK."""
    if "processIds" in task:
        ids = list(task["processIds"])
    else:
        ids = sorted(proc_id for proc_id, entry in processes if matches_service(task, entry))
    if not ids:
        return []
    if task.get("targetType", "ON_CPU") == "NETWORK":
        return [ids]
    return [[i] for i in ids]


def task_args(task, process_ids):
    """The (key, value) arguments of one EBPFProfilingTaskQuery command, all
    strings, as OAP writes them: times in epoch ms, the duration in seconds,
    process ids comma-joined, the extension config as compact JSON or the
    literal "null"."""
    update_time = int(task["updateTime"])
    trigger = task.get("triggerType", "FIXED_TIME")
    extension = task.get("extensionConfig")
    args = [
        ("SerialNumber", str(uuid.uuid4())),
        ("TaskId", str(task["taskId"])),
        ("ProcessId", ",".join(process_ids)),
        ("TaskUpdateTime", str(update_time)),
        ("TriggerType", trigger),
        ("TargetType", task.get("targetType", "ON_CPU")),
        ("TaskStartTime", str(int(task.get("startTime", update_time)))),
        ("ExtensionConfigJSON", "null" if extension is None
         else json.dumps(extension, separators=(",", ":"))),
    ]
    if trigger == "FIXED_TIME":
        args.append(("FixedTriggerDuration", str(int(task.get("duration", 60)))))
    return args


class ProfilingService:
    """EBPFProfilingService: task polling and profiling data upload."""

    def __init__(self, pb, calls, registry, tasks_path):
        self._pb, self._calls, self._registry = pb, calls, registry
        self._tasks_path = tasks_path

    def queryTasks(self, request, context):
        call = self._calls.admit("queryTasks", context)
        self._calls.record("queryTasks", call, context, request)
        try:
            tasks = read_tasks(self._tasks_path)
            processes = self._registry.of_agent(request.roverInstanceId)
            commands = [self._command(task, ids)
                        for task in tasks if int(task["updateTime"]) > request.latestUpdateTime
                        for ids in task_process_groups(task, processes)]
        except (OSError, ValueError, KeyError, TypeError) as e:
            context.abort(grpc.StatusCode.INTERNAL, "bad task file: %r" % (e,))
        return self._pb.command.Commands(commands=commands)

    def _command(self, task, process_ids):
        pairs = [self._pb.common.KeyStringValuePair(key=k, value=v)
                 for k, v in task_args(task, process_ids)]
        return self._pb.command.Command(command=COMMAND_NAME, args=pairs)

    def collectProfilingData(self, request_iterator, context):
        call = self._calls.admit("collectProfilingData", context)
        for seq, message in enumerate(request_iterator):
            self._calls.record("collectProfilingData", call, context, message, seq)
        return self._pb.command.Commands()


def bind(server, port, tls):
    """Binds 127.0.0.1:port (plaintext or TLS); returns the bound port."""
    address = "127.0.0.1:%d" % port
    if not tls:
        return server.add_insecure_port(address)
    with open(tls[0], "rb") as cert, open(tls[1], "rb") as key:
        credentials = grpc.ssl_server_credentials([(key.read(), cert.read())])
    return server.add_secure_port(address, credentials)


def serve(args):
    """Runs the stub until SIGTERM or SIGINT."""
    pb = gen.load()
    calls = Calls(args.record, args.auth)
    registry = Registry()
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=8))
    pb.process_grpc.add_EBPFProcessServiceServicer_to_server(
        ProcessService(pb, calls, registry), server)
    pb.profile_grpc.add_EBPFProfilingServiceServicer_to_server(
        ProfilingService(pb, calls, registry, args.tasks), server)
    port = bind(server, args.port, args.tls)
    if port == 0:
        sys.exit("oap_stub: cannot bind 127.0.0.1:%d" % args.port)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    server.start()
    print("port %d" % port, flush=True)
    stop.wait()
    server.stop(grace=1).wait()
    calls.close()


if __name__ == "__main__":
    serve(parse_args(sys.argv[1:]))
