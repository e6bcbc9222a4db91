"""Hostile suite files: grammar-based generation and mutation of valid suites, JSON and YAML.

One generator serves the fuzz tests (choices drawn by hypothesis, so failures shrink) and the
long hand-run script ``fuzz/fuzz_suites.py`` (choices from a seeded ``random.Random``, so
case N is the same case on every machine).
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import yaml

T = TypeVar("T")
ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLE = ROOT / "examples/support-refunds/suite.yaml"


class Chooser(Protocol):
    def integer(self, low: int, high: int) -> int: ...


class RandomChooser:
    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def integer(self, low: int, high: int) -> int:
        return self._random.randint(low, high)


def pick(chooser: Chooser, options: Sequence[T]) -> T:
    return options[chooser.integer(0, len(options) - 1)]


def chance(chooser: Chooser, percent: int) -> bool:
    return chooser.integer(1, 100) <= percent


# --- the material hostile input is made of ----------------------------------------------

NUMBER_TEXTS = [
    "0", "-0", "1", "0.5", "1.5e3", "9007199254740991", "-9007199254740991",
    "9007199254740992", "-9007199254740993", "18446744073709551616", "1" + "0" * 400,
    "7" * 5000, "1e308", "1e999", "-1e999", "1E+999", "5e-324", "1e-999", "NaN", "Infinity",
    "-Infinity", ".inf", "-.Inf", "+.INF", ".nan", ".NaN", "!!float nan", "!!float -inf",
    "!!int 0x1F", "!!int 1_000", "0x1F", "0o17", "012", "+1", "1_000", "1e", "--1", "!!bool yes",
    "!!bool maybe", "!!null x", "!!str 1",
]  # fmt: skip
PYTHON_NUMBERS: list[Any] = [
    0, -1, 2**53 - 1, 2**53, -(2**53) - 1, 2**64, 10**400, 0.1, -0.0, 5e-324, 1e308,
    float("inf"), float("-inf"), float("nan"), True, False,
]  # fmt: skip
TEXTS = [
    "", "x", "ok", "refunded", "crm:lookup-order", "a:*", "[a-", "\x00", "\x01", "\x1b[2J",
    "\x7f", "\u0085", "\u2028", "\u202e", "\ufeff", "\ufffe", "é", "𝔘", "😀", "a" * 3000,
    "\\ud800", "\ud800", "\t", "\r\n", "'", '"', "&a", "*a", "!!binary", "- x", ": x", "# x",
    "{", "]",
]  # fmt: skip
KEYS = [
    "", "$regex", "$schema", "$gte", "$in", "$literal", "$any", "$x", "~", "~1", "/", "a/b",
    "tasks", "taskId", "suiteId", "version", "modes", "trials", "count", "k", "steps", "args",
    "trajectory", "trajectroy", "expected", "match", "value", "é", "\u202e", "\x1b", "\x00",
    "<<", "? x",
]  # fmt: skip
YAML_KEYS = ["1", "1.5", "~", "null", "true", "[a, b]", "{a: 1}", "!!binary aGk=", "? [x]"]
TAGS = [
    "!!binary aGk=", "!!set {a: null}", "!!timestamp 2024-01-01", "!!omap [{a: 1}]",
    "!!python/object:os.system {}", "!custom x", "!!str [1]", "!!map [1]", "!!seq {a: 1}",
]  # fmt: skip
YAML_SNIPPETS = [
    "&a [1, *a]", "*nope", "&a x", "!!merge <<: {}", "<<: *a", "? a\n: b", "|\n  text",
    ">-\n  folded", "'unterminated", '"\\ud800"', '"\\x00"', "%YAML 1.2\n---", "---\n---",
    "...", "\t- tab", "@reserved", "`tick", "[" * 70, "{" * 70, "- " * 70,
]  # fmt: skip
REGEXES = ["", "a", "^x$", "(a+)+$", "(a|a)*b", "[", "(?P<n>x)", "\\", "a{1,99999}", "(?=x)",
           "\\p{L}", "[[:alpha:]]", "\\d+", "(?i)X", "x" * 500, "\x00", "é+"]  # fmt: skip
SCHEMAS: list[Any] = [
    {}, True, False, {"type": "string"}, {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/a"}}},
    {"$ref": "http://example.com/s.json"}, {"type": "nope"}, {"pattern": "["},
    {"pattern": "(a+)+$"}, {"minimum": float("inf")}, {"enum": []}, {"properties": {"a": 1}},
    {"$schema": "http://json-schema.org/draft-04/schema#"}, {"format": "email"}, [],
]  # fmt: skip
GLOBS = ["a:b", "a:*", "*", "**", "?", "[", "[!a]", "[a-", "a:[z-a]", "\\", "", " ", "a:b*c?d"]
BYTES = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xef\xbb\xbf", b"\x00", b"\xfe\xff", b"\r",
         b"\x1b", b"\xf0\x9f", b"\x80"]  # fmt: skip


def valid_suites() -> list[dict[str, Any]]:
    """Valid suite documents to mutate: the shipped example and two small ones."""
    example = yaml.safe_load(EXAMPLE.read_text("utf-8"))
    small: dict[str, Any] = {
        "suiteId": "fuzz.x.evals.small",
        "version": "1.0.0",
        "modes": ["golden"],
        "tasks": [
            {
                "taskId": "t",
                "input": {"q": 1},
                "expected": {"kind": "golden", "match": {"strategy": "json-match", "value": {}}},
            }
        ],
    }
    matchers = copy.deepcopy(small)
    matchers["trials"] = {"count": 2, "passRule": "any", "k": 1}
    matchers["tasks"][0]["expected"]["trajectory"] = {
        "steps": [
            {"tool": "a:*", "args": {"n": {"$gte": 1, "$lt": 10}, "s": {"$in": ["x", 2]}}},
            {"tool": "b:c", "args": {"v": {"$any": True}, "l": {"$literal": {"$regex": "x"}}}},
        ],
        "order": "any-order",
        "argsMatch": "exact",
        "forbidden": ["z:*"],
        "before": [["a:*", "b:c"]],
        "maxCalls": 5,
    }
    return [example, small, matchers]


_SUITES = valid_suites()


# --- values and documents ---------------------------------------------------------------


def value(chooser: Chooser, depth: int = 0) -> Any:
    """A JSON-ish value: mostly sensible, often hostile, sometimes deep or wide."""
    kind = chooser.integer(0, 9 if depth < 4 else 5)
    if kind <= 1:
        return pick(chooser, PYTHON_NUMBERS)
    if kind <= 3:
        return pick(chooser, TEXTS)
    if kind == 4:
        return pick(chooser, [None, True, False, 0, 1, "x"])
    if kind == 5:
        return nested(pick(chooser, [1, 2, 5, 20, 58, 70]), pick(chooser, [[], {}, "x", 1]))
    if kind <= 7:
        return [value(chooser, depth + 1) for _ in range(chooser.integer(0, 4))]
    return {pick(chooser, KEYS): value(chooser, depth + 1) for _ in range(chooser.integer(0, 4))}


def nested(depth: int, inner: Any) -> Any:
    for _ in range(depth):
        inner = [inner]
    return inner


def _paths(doc: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [here]
    if isinstance(doc, dict):
        for key, item in doc.items():
            found += _paths(item, (*here, key))
    elif isinstance(doc, list):
        for i, item in enumerate(doc):
            found += _paths(item, (*here, i))
    return found


def _parent(doc: Any, path: tuple[Any, ...]) -> Any:
    for part in path[:-1]:
        doc = doc[part]
    return doc


def mutate(chooser: Chooser, doc: Any) -> Any:
    """One structural mutation at a random place of ``doc`` (a deep copy)."""
    doc = copy.deepcopy(doc)
    paths = _paths(doc)[1:]
    if not paths:
        return value(chooser)
    path = pick(chooser, paths)
    parent, last = _parent(doc, path), path[-1]
    op = chooser.integer(0, 7)
    if op <= 2:
        parent[last] = value(chooser)
    elif op == 3:
        del parent[last]
    elif op == 4 and isinstance(parent, dict):
        parent[pick(chooser, KEYS)] = value(chooser)
    elif op == 4:
        parent.insert(last, value(chooser))
    elif op == 5 and chance(chooser, 30):
        parent[last] = nested(chooser.integer(55, 70), parent[last])
    elif op == 6 and isinstance(parent[last], list):
        parent[last] = parent[last] * chooser.integer(2, 40)
    else:
        parent[last] = pick(chooser, [[parent[last]], {"x": parent[last]}, str(parent[last])])
    return doc


def _targeted(chooser: Chooser, doc: dict[str, Any]) -> None:
    """Hostile values where the suite gives them meaning: counts, bars, weights, arguments."""
    number = pick(chooser, [*PYTHON_NUMBERS, 1000, 1001, 10**9, 0, -1])
    where = chooser.integer(0, 4)
    task = doc["tasks"][0] if doc.get("tasks") else {}
    if where == 0:
        doc["trials"] = {"count": number}
    elif where == 1:
        doc["thresholds"] = {pick(chooser, ["passScore", "maxCostUsd", "maxP95LatencyMs"]): number}
    elif where == 2 and isinstance(task, dict):
        task["expected"] = {"kind": "golden", "match": {"strategy": "contains", "value": number}}
    elif where == 3 and isinstance(task, dict):
        step = {"tool": "a:b", "args": {"id": number, "m": {pick(chooser, KEYS): number}}}
        task["expected"] = {
            "kind": "golden",
            "match": {"strategy": "exact", "value": "ok"},
            "trajectory": {"steps": [step] * chooser.integer(1, 3), "maxCalls": number},
        }
    else:
        doc["tasks"] = doc.get("tasks", []) * chooser.integer(1, 3) or [{}]


def _semantic(chooser: Chooser, doc: dict[str, Any]) -> None:
    """A near-valid edit of the first task: matchers, globs, orders, weights, fixtures."""
    tasks = doc.get("tasks")
    if not isinstance(tasks, list) or not tasks or not isinstance(tasks[0], dict):
        return
    task = tasks[0]
    matcher = pick(
        chooser,
        [
            {"$regex": pick(chooser, REGEXES)},
            {"$schema": pick(chooser, SCHEMAS)},
            {"$in": [value(chooser) for _ in range(chooser.integer(0, 3))]},
            {pick(chooser, ["$gte", "$gt", "$lte", "$lt"]): pick(chooser, PYTHON_NUMBERS)},
            {"$gte": 1, "$lt": pick(chooser, PYTHON_NUMBERS)},
            {"$any": value(chooser)},
            {"$literal": value(chooser)},
            {"$regex": "x", "plain": 1},
            {"$nope": 1},
        ],
    )
    steps = [
        {"tool": pick(chooser, GLOBS), "args": {"a": matcher, "b": {"c": matcher}}}
        for _ in range(chooser.integer(0, 3))
    ]
    trajectory = {
        "steps": steps,
        "order": pick(chooser, ["exact", "in-order", "any-order"]),
        "argsMatch": pick(chooser, ["subset", "exact"]),
        "forbidden": [pick(chooser, GLOBS) for _ in range(chooser.integer(0, 2))],
        "before": [[pick(chooser, GLOBS), pick(chooser, GLOBS)]] if chance(chooser, 30) else [],
    }
    if chance(chooser, 50):
        weights = [pick(chooser, [0, 0.1, 0.2, 0.5, 1, 5e-324, 1.0000001]) for _ in range(3)]
        task["expected"] = {
            "kind": "rubric",
            "rubric": [{"criterion": f"c{i}", "weight": w} for i, w in enumerate(weights)],
            "trajectory": trajectory,
        }
    else:
        strategy = pick(chooser, ["exact", "contains", "json-match"])
        match = {"strategy": strategy, "value": value(chooser)}
        task["expected"] = {"kind": "golden", "match": match, "trajectory": trajectory}
    if chance(chooser, 40):
        responses = [{"tool": pick(chooser, GLOBS), "response": value(chooser)}]
        task["fixtures"] = {"toolResponses": responses, "memorySeed": [{"k": value(chooser)}]}
    if chance(chooser, 30):
        doc["thresholds"] = {"passScore": pick(chooser, [0, 0.1, 0.3, 5e-324, 1, 0.99999999])}


# --- serialisation and text ---------------------------------------------------------------


def serialise(chooser: Chooser, doc: Any) -> tuple[str, str]:
    """``doc`` as JSON or YAML text; a form that cannot hold it falls back to the other."""
    if chance(chooser, 50):
        try:
            return ".yaml", yaml.safe_dump(doc, allow_unicode=chance(chooser, 50), width=60)
        except (yaml.YAMLError, RecursionError):
            pass
    try:
        return ".json", json.dumps(doc, indent=pick(chooser, [None, 1, 2]))
    except (ValueError, TypeError, RecursionError):
        return ".json", "{}"


def splice(chooser: Chooser, data: bytes, pieces: Sequence[bytes]) -> bytes:
    """Insert, replace or delete a little at a random position."""
    at = chooser.integer(0, len(data))
    op = chooser.integer(0, 2)
    piece = pick(chooser, pieces)
    if op == 0:
        return data[:at] + piece + data[at:]
    if op == 1:
        return data[:at] + piece + data[at + len(piece) :]
    return data[:at] + data[at + chooser.integer(1, 8) :]


def grammar_yaml(chooser: Chooser, depth: int = 0) -> str:
    """A YAML document from hostile productions: keys, tags, anchors, numbers, nesting."""
    lines = []
    for i in range(chooser.integer(1, 6)):
        key = pick(chooser, [*YAML_KEYS, *[f"k{i}"] * 6, "suiteId", "tasks", "trials"])
        production = chooser.integer(0, 6)
        if production == 0:
            body = pick(chooser, NUMBER_TEXTS)
        elif production == 1:
            body = pick(chooser, TAGS)
        elif production == 2:
            body = pick(chooser, YAML_SNIPPETS)
        elif production == 3:
            body = json.dumps(pick(chooser, TEXTS))
        elif production == 4 and depth < 3:
            inner = grammar_yaml(chooser, depth + 1).replace("\n", "\n  ")
            body = "\n  " + inner
        elif production == 5:
            body = f"&a{i} [{', '.join([f'*a{i - 1}'] * chooser.integer(1, 12))}]" if i else "x"
        else:
            body = "[" * chooser.integer(1, 70) + "]" * chooser.integer(0, 70)
        lines.append(f"{key}: {body}")
    return "\n".join(lines) + "\n"


def alias_chain(chooser: Chooser) -> str:
    """Anchors that each repeat the last one: a bomb for some widths and lengths."""
    width, length = chooser.integer(1, 12), chooser.integer(1, 9)
    lines = ["a0: &a0 [x, x]"]
    for i in range(1, length + 1):
        lines.append(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def case(chooser: Chooser) -> tuple[str, bytes]:
    """One hostile case: a file suffix and the bytes of the file."""
    kind = chooser.integer(0, 9)
    if kind <= 4:  # mutated valid suites, structurally then maybe textually
        doc = copy.deepcopy(pick(chooser, _SUITES))
        if chance(chooser, 50):
            _semantic(chooser, doc)
        if chance(chooser, 30):
            _targeted(chooser, doc)
        for _ in range(chooser.integer(0 if kind > 1 else 1, 2)):
            doc = mutate(chooser, doc)
        suffix, text = serialise(chooser, doc)
        data = text.encode("utf-8", "surrogatepass")
    elif kind <= 6:  # valid suites, mutated as text
        suffix, text = serialise(chooser, pick(chooser, _SUITES))
        data = text.encode()
        pieces = [t.encode() for t in NUMBER_TEXTS + YAML_SNIPPETS + TAGS + KEYS] + BYTES
        for _ in range(chooser.integer(1, 6)):
            data = splice(chooser, data, pieces)
    elif kind <= 8:
        suffix = ".yaml"
        text = grammar_yaml(chooser) if kind == 7 else alias_chain(chooser)
        data = text.encode("utf-8", "surrogatepass")
    else:
        suffix = pick(chooser, [".json", ".yaml", ".txt"])
        data = bytes(chooser.integer(0, 255) for _ in range(chooser.integer(0, 64)))
    if chance(chooser, 5):
        data = b"\xef\xbb\xbf" + data
    return pick(chooser, [suffix] * 4 + [".yml", ".txt"]), data


def documents(chooser: Chooser) -> Any:
    """A Python document as the host might hand to parse_suite, or worse."""
    doc = mutate(chooser, pick(chooser, _SUITES))
    extra: list[Callable[[], Any]] = [
        lambda: {1: "x"},
        lambda: {(1, 2): "x"},
        lambda: (1, 2),
        lambda: b"bytes",
        lambda: {1, 2},
        lambda: nested(chooser.integer(60, 5000), 1),
        lambda: [list(range(100))] * 200,
        lambda: object(),
        lambda: "\ud800",
        lambda: {"\udcff": 1},
        lambda: 10**5000,  # Python will not print it
        lambda: {10**5000: 1},
        lambda: {(1, 10**5000): 1},
    ]
    if chance(chooser, 50):
        paths = _paths(doc)[1:]
        if paths:
            path = pick(chooser, paths)
            _parent(doc, path)[path[-1]] = pick(chooser, extra)()
    return doc
