"""A small gRPC client for the stand-in OAP's own spec (spec/integration/oap_stub_spec.lua).

It makes one call the way an eBPF agent would, with fixed, known payloads,
and prints the outcome as one JSON line on stdout:
  {"code": "OK", "response": {...proto3 JSON...}}   or
  {"code": "UNAUTHENTICATED", "details": "..."}      (any gRPC failure)

Actions:
  report     reportProcesses: a Kubernetes process (pid 4242) and a host
             process (pid 4343) whose command line is not ASCII
  keepalive  keepAlive for the same two processes
  query      queryTasks with --latest MS
  stream     collectProfilingData: three messages (on-CPU with task metadata,
             on-CPU without, off-CPU)
"""
import argparse
import json
import sys

import grpc
from google.protobuf import json_format

import gen

AGENT_ID = "0b7e1c0e-5d1b-4b8e-9a57-2f4f3c1e7a10"
K8S_ENTITY = {"layer": "K8S_SERVICE", "serviceName": "shop::cart.default",
              "instanceName": "cart-7d9f", "processName": "cart", "labels": ["k8s-service"]}
HOST_ENTITY = {"layer": "OS_LINUX", "serviceName": "spec-svc", "instanceName": "node-1",
               "processName": "worker", "labels": []}
HOST_COMMAND_LINE = "/usr/bin/w\u00f6rker --name=caf\u00e9 \u2014 \U0001f680"


def parse_args(argv):
    """Command-line options."""
    p = argparse.ArgumentParser(description="talk to the stand-in OAP once")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--ca", help="PEM CA certificate: connect with TLS")
    p.add_argument("--auth", help="send this 'authentication' metadata value")
    p.add_argument("--agent", default=AGENT_ID, help="the agent instance id")
    p.add_argument("--latest", type=int, default=0, help="latestUpdateTime for query")
    p.add_argument("action", choices=["report", "keepalive", "query", "stream"])
    return p.parse_args(argv)


def channel(args):
    """A channel to the stub on 127.0.0.1."""
    target = "127.0.0.1:%d" % args.port
    if not args.ca:
        return grpc.insecure_channel(target)
    with open(args.ca, "rb") as f:
        return grpc.secure_channel(target, grpc.ssl_channel_credentials(root_certificates=f.read()))


def property_list(pb, pairs):
    """KeyStringValuePair messages from (key, value) pairs."""
    return [pb.common.KeyStringValuePair(key=k, value=v) for k, v in pairs]


def report_request(pb, args):
    """An EBPFProcessReportList with one Kubernetes and one host process."""
    m = pb.process
    k8s = m.EBPFKubernetesProcessMetadata(
        entity=m.EBPFProcessEntityMetadata(**K8S_ENTITY), pid=4242,
        properties=property_list(pb, [("pod_name", "cart-7d9f"), ("pid", "4242"),
                                      ("support_ebpf_profiling", "true")]))
    host = m.EBPFHostProcessMetadata(
        entity=m.EBPFProcessEntityMetadata(**HOST_ENTITY), pid=4343,
        properties=property_list(pb, [("command_line", HOST_COMMAND_LINE),
                                      ("support_ebpf_profiling", "true")]))
    return m.EBPFProcessReportList(ebpfAgentID=args.agent, processes=[
        m.EBPFProcessProperties(k8sProcess=k8s), m.EBPFProcessProperties(hostProcess=host)])


def keepalive_request(pb, args):
    """An EBPFProcessPingPkgList for the two processes of report_request."""
    m = pb.process
    pings = [m.EBPFProcessPingPkg(entityMetadata=m.EBPFProcessEntityMetadata(**entity),
                                  properties=property_list(pb, [("support_ebpf_profiling", "true")]))
             for entity in (K8S_ENTITY, HOST_ENTITY)]
    return m.EBPFProcessPingPkgList(ebpfAgentID=args.agent, processes=pings)


def stack(pb, kind, stack_id, symbols):
    """One EBPFProfilingStackMetadata."""
    return pb.profile.EBPFProfilingStackMetadata(
        stackType=pb.profile.EBPFProfilingStackType.Value(kind), stackId=stack_id,
        stackSymbols=symbols)


def stream_messages(pb):
    """Three EBPFProfilingData messages of one task."""
    m = pb.profile
    task = m.EBPFProfilingTaskMetadata(taskId="task-1", processId="proc-1",
                                       profilingStartTime=1700000000000,
                                       currentTime=1700000005000)
    kernel = stack(pb, "PROCESS_KERNEL_SPACE", 7, ["do_syscall_64", "[MISSING]"])
    user = stack(pb, "PROCESS_USER_SPACE", 9, ["spin", "main", "__libc_start_main"])
    return [
        m.EBPFProfilingData(task=task, onCPU=m.EBPFOnCPUProfiling(stacks=[kernel, user], dumpCount=5)),
        m.EBPFProfilingData(onCPU=m.EBPFOnCPUProfiling(stacks=[user], dumpCount=3)),
        m.EBPFProfilingData(offCPU=m.EBPFOffCPUProfiling(stacks=[user], switchCount=2,
                                                         duration=12345)),
    ]


def call(pb, args, ch):
    """Makes the chosen call; returns its response message."""
    metadata = [("authentication", args.auth)] if args.auth else None
    processes = pb.process_grpc.EBPFProcessServiceStub(ch)
    profiling = pb.profile_grpc.EBPFProfilingServiceStub(ch)
    if args.action == "report":
        return processes.reportProcesses(report_request(pb, args), metadata=metadata, timeout=5)
    if args.action == "keepalive":
        return processes.keepAlive(keepalive_request(pb, args), metadata=metadata, timeout=5)
    if args.action == "query":
        query = pb.profile.EBPFProfilingTaskQuery(roverInstanceId=args.agent,
                                                  latestUpdateTime=args.latest)
        return profiling.queryTasks(query, metadata=metadata, timeout=5)
    return profiling.collectProfilingData(iter(stream_messages(pb)), metadata=metadata, timeout=5)


def main(argv):
    """Runs one action and prints its outcome."""
    args = parse_args(argv)
    pb = gen.load()
    with channel(args) as ch:
        try:
            response = call(pb, args, ch)
            outcome = {"code": "OK", "response": json_format.MessageToDict(
                response, preserving_proto_field_name=True, including_default_value_fields=True)}
        except grpc.RpcError as e:
            outcome = {"code": e.code().name, "details": e.details()}
    print(json.dumps(outcome))


if __name__ == "__main__":
    main(sys.argv[1:])
