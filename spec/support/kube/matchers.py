"""fieldSelector and labelSelector of list and watch requests: parsed into a
predicate on objects, or ValueError with the message of the 400 answer."""
import re

import resources

LABEL_SET = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")
LABEL_EQ = re.compile(r"^\s*([A-Za-z0-9_./-]+)\s*(==|!=|=)\s*([A-Za-z0-9_.-]*)\s*$")
LABEL_EXISTS = re.compile(r"^\s*(!?)\s*([A-Za-z0-9_./-]+)\s*$")


def split_terms(text):
    """Splits at the commas outside parentheses and not escaped."""
    terms, depth, current, escaped = [], 0, "", False
    for ch in text:
        if escaped:
            current, escaped = current + ch, False
        elif ch == "\\":
            escaped = True
        elif ch == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            depth += {"(": 1, ")": -1}.get(ch, 0)
            current += ch
    terms.append(current)
    return [t for t in terms if t.strip()]


def field_value(obj, path):
    """An object's field as a field selector compares it: a string, "" when absent."""
    value = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    if isinstance(value, bool):
        return "true" if value else "false"
    return "" if value is None else str(value)


def field_term(resource, term):
    """One "field=value" / "field==value" / "field!=value" term as a predicate."""
    match = re.match(r"^([A-Za-z.]+)(==|!=|=)(.*)$", term.strip())
    if not match:
        raise ValueError('invalid field selector term "%s"' % term)
    field, op, want = match.groups()
    if field not in resources.FIELDS.get(resource, resources.COMMON_FIELDS):
        raise ValueError('field label not supported for %s: %s' % (resource, field))
    if op == "!=":
        return lambda obj: field_value(obj, field) != want
    return lambda obj: field_value(obj, field) == want


def label_term(term):
    """One label requirement as a predicate on a labels dict."""
    match = LABEL_SET.match(term)
    if match:
        key, op, values = match.groups()
        allowed = {v.strip() for v in values.split(",")}
        if op == "in":
            return lambda labels: labels.get(key) in allowed
        return lambda labels: labels.get(key) not in allowed
    match = LABEL_EQ.match(term)
    if match:
        key, op, want = match.groups()
        if op == "!=":
            return lambda labels: labels.get(key) != want
        return lambda labels: labels.get(key) == want
    match = LABEL_EXISTS.match(term)
    if match:
        negated, key = match.groups()
        return lambda labels: (key in labels) != bool(negated)
    raise ValueError('unable to parse label selector requirement "%s"' % term.strip())


def predicate(resource, field_selector, label_selector):
    """A function telling whether an object matches both selectors (each may be
    empty or None: everything matches). Raises ValueError on a bad selector."""
    fields = [field_term(resource, t) for t in split_terms(field_selector or "")]
    labels = [label_term(t) for t in split_terms(label_selector or "")]

    def matches(obj):
        obj_labels = obj.get("metadata", {}).get("labels") or {}
        return all(f(obj) for f in fields) and all(req(obj_labels) for req in labels)
    return matches
