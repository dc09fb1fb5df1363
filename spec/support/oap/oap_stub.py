"""A stand-in SkyWalking OAP backend for moonrover's end-to-end tests.

It serves the gRPC services an eBPF agent uses, on 127.0.0.1, from Python
modules generated at start from proto/skywalking (see gen.py): for
on-demand profiling EBPFProcessService and EBPFProfilingService, for
continuous profiling ContinuousProfilingService and MeterReportService, and
for network profiling also LogReportService and
SpanAttachedEventReportService. It:

- records every call it receives as JSON lines (--record FILE): one line per
  request message (per streamed message for client streams) and one per
  rejected call;
- answers reportProcesses with a stable process id per reported process;
- answers keepAlive and the client streams with empty Commands;
- answers queryTasks from a task file the test writes and may rewrite at any
  time (--tasks FILE), encoding each task as OAP encodes an
  "EBPFProfilingTaskQuery" command;
- answers queryPolicies from a policy file the test writes (--policies
  FILE), with OAP's "ContinuousProfilingPolicyQuery" command for the
  services whose policy changed, and reportProfilingTask with a new task id
  in OAP's "ContinuousProfilingReportTask" command;
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
POLICY_COMMAND = "ContinuousProfilingPolicyQuery"
REPORT_COMMAND = "ContinuousProfilingReportTask"


def parse_args(argv):
    """Command-line options."""
    p = argparse.ArgumentParser(description="stand-in SkyWalking OAP for moonrover tests")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    p.add_argument("--record", required=True, help="JSON-lines file of what the stub receives")
    p.add_argument("--tasks", help="JSON file with the profiling tasks queryTasks returns")
    p.add_argument("--policies", help="JSON file with the continuous-profiling policies per service")
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

    def record(self, rpc, call, context, message, seq=None, answer=None, task=None):
        """Records one received message (seq: its index in a stream; answer:
        the response message, for the calls whose answer specs read; task:
        the task a reportProfilingTask created)."""
        extra = {"message": message_dict(message)}
        if seq is not None:
            extra["seq"] = seq
        if answer is not None:
            extra["answer"] = message_dict(answer)
        if task is not None:
            extra["task"] = task
        self._write(rpc, call, context, extra)

    def record_stream(self, rpc, context, request_iterator):
        """Admits a client stream and records its messages one by one."""
        call = self.admit(rpc, context)
        for seq, message in enumerate(request_iterator):
            self.record(rpc, call, context, message, seq)

    def _write(self, rpc, call, context, extra):
        line = {"rpc": rpc, "call": call, "time": now_ms(), "metadata": metadata_dict(context)}
        line.update(extra)
        with self._lock:
            self._file.write(json.dumps(line, separators=(",", ":")) + "\n")
            self._file.flush()

    def close(self):
        """Closes the record file."""
        self._file.close()


def process_id(service, instance, process):
    """The id of a process. Like OAP's, it is derived from the service,
    instance and process names only, so it is the same on every report and
    across stub restarts."""
    key = "\0".join((service, instance, process))
    return hashlib.sha256(key.encode()).hexdigest()


class Registry:
    """The processes each agent reported or kept alive: entity and latest
    properties (keepAlive replaces the properties, as OAP does)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._agents = {}

    def put(self, agent_id, entity, properties):
        """Stores or updates one process; returns its id."""
        proc_id = process_id(entity.serviceName, entity.instanceName, entity.processName)
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
    """The (key, value) arguments of one EBPFProfilingTaskQuery command after
    its SerialNumber, all strings, as OAP writes them: times in epoch ms, the
    duration in seconds, process ids comma-joined, the extension config as
    compact JSON or the literal "null"."""
    update_time = int(task["updateTime"])
    trigger = task.get("triggerType", "FIXED_TIME")
    extension = task.get("extensionConfig")
    args = [
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


def command(pb, name, pairs):
    """A Command of this name; its first argument is a fresh SerialNumber, as
    OAP sends it."""
    args = [pb.common.KeyStringValuePair(key=k, value=v)
            for k, v in [("SerialNumber", str(uuid.uuid4()))] + pairs]
    return pb.command.Command(command=name, args=args)


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
            commands = [command(self._pb, COMMAND_NAME, task_args(task, ids))
                        for task in tasks if int(task["updateTime"]) > request.latestUpdateTime
                        for ids in task_process_groups(task, processes)]
        except (OSError, ValueError, KeyError, TypeError) as e:
            context.abort(grpc.StatusCode.INTERNAL, "bad task file: %r" % (e,))
        return self._pb.command.Commands(commands=commands)

    def collectProfilingData(self, request_iterator, context):
        self._calls.record_stream("collectProfilingData", context, request_iterator)
        return self._pb.command.Commands()


def read_policies(path):
    """The policy file: service name -> its "Profiling" object (target type
    -> check type -> item), empty when there is no file."""
    if not path or not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        policies = json.load(f)
    if not isinstance(policies, dict) or not all(isinstance(p, dict) for p in policies.values()):
        raise ValueError("the policy file must hold a JSON object of objects")
    return policies


def policy_uuid(profiling):
    """A policy's UUID. Like OAP's it is a hash of the policy's content: it
    changes when the policy does, and only then."""
    text = json.dumps(profiling, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def changed_policies(queries, policies):
    """The ServiceWithPolicyJSON entries OAP would send: a service whose
    policy UUID differs from the agent's, with its policy; a service that has
    no policy but for which the agent holds a UUID, with UUID "" (the policy
    was removed)."""
    out = []
    for q in queries:
        profiling = policies.get(q.serviceName)
        if profiling is None:
            if q.uuid:
                out.append({"ServiceName": q.serviceName, "UUID": ""})
        elif policy_uuid(profiling) != q.uuid:
            out.append({"ServiceName": q.serviceName, "UUID": policy_uuid(profiling),
                        "Profiling": profiling})
    return out


class ContinuousService:
    """ContinuousProfilingService: policies per service, and the tasks of
    fired policies. Like OAP, it never hands those tasks out in queryTasks
    (OAP sends only FIXED_TIME tasks there): the agent runs them itself."""

    def __init__(self, pb, calls, policies_path):
        self._pb, self._calls = pb, calls
        self._policies_path = policies_path

    def queryPolicies(self, request, context):
        call = self._calls.admit("queryPolicies", context)
        try:
            changed = changed_policies(request.policies, read_policies(self._policies_path))
        except (OSError, ValueError) as e:
            self._calls.record("queryPolicies", call, context, request)
            context.abort(grpc.StatusCode.INTERNAL, "bad policy file: %r" % (e,))
        commands = []
        if changed:
            text = json.dumps(changed, separators=(",", ":"))
            commands.append(command(self._pb, POLICY_COMMAND, [("ServiceWithPolicyJSON", text)]))
        answer = self._pb.command.Commands(commands=commands)
        self._calls.record("queryPolicies", call, context, request, answer=answer)
        return answer

    def reportProfilingTask(self, request, context):
        call = self._calls.admit("reportProfilingTask", context)
        try:
            task = reported_task(request)
        except ValueError as e:
            self._calls.record("reportProfilingTask", call, context, request)
            context.abort(grpc.StatusCode.UNKNOWN, str(e))
        answer = self._pb.command.Commands(
            commands=[command(self._pb, REPORT_COMMAND, [("TaskId", task["taskId"])])])
        self._calls.record("reportProfilingTask", call, context, request, answer=answer, task=task)
        return answer


TARGET_TYPES = {"onCPU": "ON_CPU", "offCPU": "OFF_CPU", "network": "NETWORK"}


def reported_task(report):
    """The task OAP records for a fired policy: a new id, the process id of
    the reported process, its target type, OAP's time as its start, the
    report's duration (seconds). A report without a target task or with a
    URI cause without a URI fails, as it fails in OAP."""
    target = report.WhichOneof("targetTask")
    if target is None:
        raise ValueError("the continuous profiling task type cannot be recognized")
    for cause in report.causes:
        if cause.WhichOneof("cause") == "uri" and cause.uri.WhichOneof("uri") is None:
            raise ValueError("the uri case not set")
    return {"taskId": str(uuid.uuid4()),
            "processId": process_id(report.serviceName, report.instanceName, report.processName),
            "targetType": TARGET_TYPES[target], "startTime": now_ms(), "duration": report.duration}


class MeterService:
    """MeterReportService: meters, recorded message by message."""

    def __init__(self, pb, calls):
        self._pb, self._calls = pb, calls

    def collect(self, request_iterator, context):
        self._calls.record_stream("collectMeter", context, request_iterator)
        return self._pb.command.Commands()

    def collectBatch(self, request_iterator, context):
        self._calls.record_stream("collectMeterBatch", context, request_iterator)
        return self._pb.command.Commands()


class LogService:
    """LogReportService: log records (network profiling's sampled traces)."""

    def __init__(self, pb, calls):
        self._pb, self._calls = pb, calls

    def collect(self, request_iterator, context):
        self._calls.record_stream("collectLogs", context, request_iterator)
        return self._pb.command.Commands()


class SpanEventService:
    """SpanAttachedEventReportService: events attached to spans."""

    def __init__(self, pb, calls):
        self._pb, self._calls = pb, calls

    def collect(self, request_iterator, context):
        self._calls.record_stream("collectSpanEvents", context, request_iterator)
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
    pb.continuous_grpc.add_ContinuousProfilingServiceServicer_to_server(
        ContinuousService(pb, calls, args.policies), server)
    pb.meter_grpc.add_MeterReportServiceServicer_to_server(MeterService(pb, calls), server)
    pb.logging_grpc.add_LogReportServiceServicer_to_server(LogService(pb, calls), server)
    pb.tracing_grpc.add_SpanAttachedEventReportServiceServicer_to_server(
        SpanEventService(pb, calls), server)
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
