"""The paths of the Kubernetes REST API the stand-in serves, parsed into
the resource, namespace and name they address."""
import resources


class Route:
    """resource; namespace (None: all, or cluster-scoped); name (None: a collection)."""

    def __init__(self, resource, namespace, name):
        self.resource, self.namespace, self.name = resource, namespace, name


def split_version(parts):
    """("v1" | "group/version", the rest of the path), or (None, None)."""
    if len(parts) >= 2 and parts[0] == "api" and parts[1] == "v1":
        return "v1", parts[2:]
    if len(parts) >= 3 and parts[0] == "apis":
        return parts[1] + "/" + parts[2], parts[3:]
    return None, None


def parse(path):
    """The Route of a path, or None when the server has no such resource."""
    version, rest = split_version([p for p in path.split("/") if p])
    if not rest:
        return None
    namespace = None
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if len(rest) > 2 or rest[0] not in resources.RESOURCES:
        return None
    served_version, _, namespaced = resources.RESOURCES[rest[0]]
    if served_version != version or (namespace is not None and not namespaced):
        return None
    if len(rest) == 2 and namespaced and namespace is None:
        return None
    return Route(rest[0], namespace, rest[1] if len(rest) == 2 else None)
