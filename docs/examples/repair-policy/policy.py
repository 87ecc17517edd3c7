"""An example `command` repair policy (protocol 1): standard library only, no network, deterministic.

    contracts repair-replay CASES --policy command --command "python3 docs/examples/repair-policy/policy.py" \
        --ledger LED [--feedback VIEW] [--samples G] [--send-allowed]

It reads one state (canonical JSON) on stdin and prints one answer on stdout:
`{"action": [ops] | "abstain", "confidence": c, "usage": {"input_tokens": n, "output_tokens": m}}`.
It exercises every part of the protocol:

- feedback views: it uses whatever each report entry carries (`code`, `pointer`, `detail`); without a
  code it reads one off the schema and candidate; with only the text it parses the pointer out of the
  validator's messages ("required property 'x' is missing", "unexpected property 'x'"); with no report
  (`context-only`) it runs no validator of its own and abstains;
- `sample` (`--samples G`): sample k takes the k-th fill for a missing value (schema default, then each
  enum value) and lowers its confidence, so a group holds distinct patches;
- `allowed` (`--send-allowed`): a patch that writes outside the allowed set is not sent (abstain);
- `usage`: tokens counted as JSON lexical tokens (strings, numbers, literals, punctuation) of the state
  read and the answer written (a stand-in: a model host reports its tokenizer's counts);
- `--regenerate` (an argument): answer with a full regeneration, `replace ""` with a whole new object
  that keeps only the required arguments (optional ones are dropped, as a regenerating model often
  does). Pointer-relative collateral scores this whenever a dropped argument was right.
"""

from __future__ import annotations

import json
import re
import sys

REGENERATE = "--regenerate" in sys.argv[1:]
JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*|true|false|null|[{}\[\]:,]')


def sub_schema(schema, tokens):
    for t in tokens:
        props = schema.get("properties", {}) if isinstance(schema, dict) else {}
        if t in props:
            schema = props[t]
        elif isinstance(schema, dict) and isinstance(schema.get("items"), dict) and t.isdigit():
            schema = schema["items"]
        else:
            return None
    return schema if isinstance(schema, dict) else None


def tokens_of(pointer):
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer.split("/")[1:]] if pointer else []


def lookup(doc, tokens):
    for t in tokens:
        if isinstance(doc, dict) and t in doc:
            doc = doc[t]
        elif isinstance(doc, list) and t.isdigit() and int(t) < len(doc):
            doc = doc[int(t)]
        else:
            raise KeyError(t)
    return doc


def coerce(value, kind):
    """A reading of `value` as JSON type `kind` that renders back to the same text, or KeyError."""
    if isinstance(value, str):
        if kind == "integer" and re.fullmatch(r"-?(0|[1-9][0-9]*)", value):
            return int(value)
        if kind == "number" and re.fullmatch(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?", value):
            n = float(value)
            return int(n) if "." not in value else n
        if kind == "boolean" and value in ("true", "false"):
            return value == "true"
        if kind in ("array", "object") and value[:1] in "[{":
            parsed = json.loads(value)
            if isinstance(parsed, list) == (kind == "array"):
                return parsed
    if kind == "string" and isinstance(value, list) and len(value) == 1 and isinstance(value[0], str):
        return value[0]
    if kind == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value)
    raise KeyError(kind)


TEXT = [
    (re.compile(r"required property '([^']+)' is missing"), "E_REQUIRED"),
    (re.compile(r"unexpected property '([^']+)'"), "E_EXTRA"),
]


def entries(state):
    """(code, pointer) per report entry, whatever the feedback view left of it."""
    out = []
    for e in state["report"]:
        code, pointer = e.get("code", ""), e.get("pointer", "")
        if not pointer and e.get("detail"):
            for rx, c in TEXT:
                m = rx.search(e["detail"])
                if m:
                    code, pointer = c, "/" + m.group(1).replace("~", "~0").replace("/", "~1")
        if pointer and not code:
            try:
                value = lookup(state["candidate"], tokens_of(pointer))
            except KeyError:
                code = "E_REQUIRED"
            else:
                sub = sub_schema(state["schema"], tokens_of(pointer)) or {}
                code = "E_TYPE" if isinstance(sub.get("type"), str) else "E_EXTRA"
                if code == "E_TYPE":
                    try:
                        coerce(value, sub["type"])
                    except (KeyError, ValueError):
                        code = ""
        out.append((code, pointer))
    return out


def propose(state):
    pick = (state.get("sample") or {}).get("index", 0)
    ops, conf = [], 0.9
    for code, pointer in entries(state):
        tokens = tokens_of(pointer)
        sub = sub_schema(state["schema"], tokens)
        if not pointer or sub is None:
            return None, 0.0
        if code == "E_TYPE":
            try:
                value = coerce(lookup(state["candidate"], tokens), sub.get("type"))
            except (KeyError, ValueError):
                return None, 0.0
            ops.append({"op": "replace", "path": pointer, "value": value})
        elif code == "E_REQUIRED":
            fills = ([sub["default"]] if "default" in sub else []) + list(sub.get("enum", []))
            if not fills:
                return None, 0.0
            ops.append({"op": "add", "path": pointer, "value": fills[pick % len(fills)]})
            conf = min(conf, 0.5 if "default" in sub and pick == 0 else 0.3)
        else:
            return None, 0.0
    return (ops or None), conf / (1 + pick)


def allowed(state, ops):
    a = state.get("allowed")
    if a is None:
        return True
    for o in ops:
        parent = o["path"].rsplit("/", 1)[0]
        if o["path"] not in a["writable"] and not (o["op"] == "add" and parent in a["add_parents"]):
            return False
    return len(ops) <= a["ops_left"]


def regenerate(state, ops):
    doc = json.loads(json.dumps(state["candidate"]))
    for o in ops:
        tokens = tokens_of(o["path"])
        parent = lookup(doc, tokens[:-1])
        if isinstance(parent, list):
            parent[int(tokens[-1])] = o["value"]
        else:
            parent[tokens[-1]] = o["value"]
    required = set(state["schema"].get("required", []))
    fixed = {tokens_of(o["path"])[0] for o in ops if o["path"]}
    kept = {k: v for k, v in doc.items() if k in required or k in fixed} if isinstance(doc, dict) else doc
    return [{"op": "replace", "path": "", "value": kept}]


def main():
    raw = sys.stdin.read()
    state = json.loads(raw)
    ops, conf = propose(state)
    if ops is not None and REGENERATE:
        ops = regenerate(state, ops)
    if ops is None or not allowed(state, ops):
        answer = {"action": "abstain"}
    else:
        answer = {"action": ops, "confidence": round(conf, 4)}
    out = json.dumps(answer, sort_keys=True)
    answer["usage"] = {
        "input_tokens": len(JSON_TOKEN.findall(raw)),
        "output_tokens": len(JSON_TOKEN.findall(out)),
    }
    print(json.dumps(answer, sort_keys=True))


if __name__ == "__main__":
    main()
