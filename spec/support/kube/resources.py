"""The resource types the stand-in API server serves, and the Status objects
it answers errors with, shaped as kube-apiserver's."""

# resource (URL name) -> (group/version, kind, namespaced)
RESOURCES = {
    "nodes": ("v1", "Node", False),
    "pods": ("v1", "Pod", True),
    "services": ("v1", "Service", True),
    "replicasets": ("apps/v1", "ReplicaSet", True),
    "deployments": ("apps/v1", "Deployment", True),
    "statefulsets": ("apps/v1", "StatefulSet", True),
    "daemonsets": ("apps/v1", "DaemonSet", True),
    "jobs": ("batch/v1", "Job", True),
    "cronjobs": ("batch/v1", "CronJob", True),
}

KIND_RESOURCE = {kind: resource for resource, (_, kind, _) in RESOURCES.items()}

# Fields a fieldSelector may name, per resource (as kube-apiserver allows).
FIELDS = {
    "pods": ("metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
             "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork",
             "status.phase", "status.podIP", "status.nominatedNodeName"),
    "services": ("metadata.name", "metadata.namespace", "spec.clusterIP", "spec.type"),
    "nodes": ("metadata.name", "spec.unschedulable"),
}
COMMON_FIELDS = ("metadata.name", "metadata.namespace")


def group_of(resource):
    """The API group of a resource ("" for the core group)."""
    version = RESOURCES[resource][0]
    return version.split("/")[0] if "/" in version else ""


def qualified(resource):
    """The resource as error messages name it: "pods", "replicasets.apps"."""
    group = group_of(resource)
    return resource + "." + group if group else resource


def status(code, reason, message, details=None):
    """A failure Status object."""
    out = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
           "message": message, "reason": reason, "code": code}
    if details is not None:
        out["details"] = details
    return out


def not_found(resource, name):
    """The 404 of a get of an object that does not exist."""
    details = {"name": name, "kind": resource}
    if group_of(resource):
        details["group"] = group_of(resource)
    return status(404, "NotFound", '%s "%s" not found' % (qualified(resource), name), details)


def expired(message):
    """The 410 of a resourceVersion or continue token older than the history kept."""
    return status(410, "Expired", message)
