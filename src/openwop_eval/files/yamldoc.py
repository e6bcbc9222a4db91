"""Decoding YAML into plain JSON values, within the loader's limits.

YAML is read with the YAML 1.2 core rules, so ``on``/``yes`` stay strings, ``012`` is twelve
and ``2024-01-01`` is not a date. The node graph is composed first (by libyaml's parser when
it is installed, with the composer here) and checked before anything is constructed:
nesting depth and alias expansion are counted as nodes are composed, so an alias bomb or a
deep document is refused at once; keys must be strings and tags must have a JSON meaning.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

import yaml
from yaml.composer import Composer
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.resolver import Resolver

from ..base import limits
from ..core.problems import Loc, Problem

_TAG = "tag:yaml.org,2002:"
_SCALAR_TAGS = {f"{_TAG}{name}" for name in ("str", "int", "float", "bool", "null")}
_CONTAINER_TAGS: dict[type[Node], str] = {SequenceNode: f"{_TAG}seq", MappingNode: f"{_TAG}map"}
_TOO_LONG_DIGITS = 100
"""Integer literals longer than this are not converted (Python refuses past 4,300 digits)."""


class TooLongInteger:
    """An integer literal with too many digits to convert; always out of the JSON range."""

    def __init__(self, digits: int) -> None:
        self.digits = digits


class RefusedError(Exception):
    """The document is refused at ``mark``: over a limit, or an alias that refers to itself."""

    def __init__(self, message: str, mark: Any, loc: Loc) -> None:
        super().__init__(message)
        self.message, self.mark, self.loc = message, mark, loc


class _LimitedComposer(Composer):
    """PyYAML's composer, counting depth and expansion and tracking the path as it goes."""

    peek_event: Callable[[], Any]  # from the parser it is mixed with

    def __init__(self) -> None:
        Composer.__init__(self)
        self._path: list[Loc] = []
        self._open_anchors: set[str] = set()
        self._measured: dict[int, tuple[int, int]] = {}  # id(node): (expanded size, height)
        self._nodes = 0
        self._alias_values = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        here = self._loc_of(parent, index)
        event = self.peek_event()
        anchor: str | None = getattr(event, "anchor", None)
        if isinstance(event, AliasEvent):
            if anchor in self._open_anchors:
                raise RefusedError(f"the alias *{anchor} refers to itself", event.start_mark, here)
            node = self._compose(parent, index)
            self._alias_values += self._measured[id(node)][0]
            if self._alias_values > limits.MAX_YAML_ALIAS_VALUES:
                raise RefusedError(
                    f"YAML aliases expand to more than {limits.MAX_YAML_ALIAS_VALUES:,} values"
                    " (the limit); an anchor may be reused, not multiplied",
                    event.start_mark,
                    here,
                )
            self._count(event, here)
            return node
        container = isinstance(event, SequenceStartEvent | MappingStartEvent)
        if container:
            if len(self._path) >= limits.MAX_DEPTH:
                raise RefusedError(_too_deep(), event.start_mark, here)
            if anchor is not None:
                self._open_anchors.add(anchor)
            self._path.append(here)
        try:
            node = self._compose(parent, index)
        finally:
            if container:
                self._path.pop()
                self._open_anchors.discard(anchor or "")
        self._nodes += 1
        self._count(event, here)
        self._measure(node, here)
        return node

    def _compose(self, parent: Node | None, index: Any) -> Node:
        node = super().compose_node(parent, index)
        assert node is not None  # the composer returns None only past the last event
        return node

    def _loc_of(self, parent: Node | None, index: Any) -> Loc:
        base = self._path[-1] if self._path else ()
        if parent is None or index is None:  # the root, or a mapping key
            return base
        if isinstance(index, int):
            return (*base, index)
        return (*base, str(index.value) if isinstance(index, ScalarNode) else "?")

    def _count(self, event: Any, here: Loc) -> None:
        if self._nodes + self._alias_values > limits.MAX_VALUES:
            raise RefusedError(
                f"more than {limits.MAX_VALUES:,} values (the limit), aliases expanded",
                event.start_mark,
                here,
            )

    def _measure(self, node: Node, here: Loc) -> None:
        children: list[Node] = []
        if isinstance(node, SequenceNode):
            children = node.value
        elif isinstance(node, MappingNode):
            children = [part for pair in node.value for part in pair]
        measured = [self._measured[id(child)] for child in children]
        size = 1 + sum(s for s, _ in measured)
        height = 0 if isinstance(node, ScalarNode) else 1 + max((h for _, h in measured), default=0)
        if height > limits.MAX_DEPTH:
            raise RefusedError(_too_deep(" once aliases are expanded"), node.start_mark, here)
        self._measured[id(node)] = (size, height)


def _too_deep(how: str = "") -> str:
    return f"nested more than {limits.MAX_DEPTH} levels deep{how} (the limit)"


class _Constructor(SafeConstructor, Resolver):
    """SafeConstructor with YAML 1.2 core-schema scalars instead of YAML 1.1's."""


def _construct_int(loader: Any, node: ScalarNode) -> int | TooLongInteger:
    text: str = loader.construct_scalar(node)
    if len(text) > _TOO_LONG_DIGITS:
        return TooLongInteger(len(text.lstrip("+-")))
    try:
        return int(text)
    except ValueError:
        raise ConstructorError(None, None, f"{text!r} is not an integer", node.start_mark) from None


def _construct_bool(loader: Any, node: ScalarNode) -> bool:
    text: str = loader.construct_scalar(node).lower()
    if text not in ("true", "false"):  # not YAML 1.1's yes/no/on/off, even when tagged
        raise ConstructorError(None, None, f"{text!r} is not true or false", node.start_mark)
    return text == "true"


def _construct_float(loader: Any, node: ScalarNode) -> float:
    text: str = loader.construct_scalar(node)
    special = _SPECIAL_FLOATS.get(text.lstrip("+-").lower())
    if special is not None:  # decoded so that the value check can refuse it as not JSON
        return -special if text.startswith("-") else special
    try:
        return float(text)
    except ValueError:
        raise ConstructorError(None, None, f"{text!r} is not a number", node.start_mark) from None


_SPECIAL_FLOATS = {".inf": math.inf, ".nan": math.nan}
_Constructor.add_constructor(f"{_TAG}int", _construct_int)
_Constructor.add_constructor(f"{_TAG}float", _construct_float)
_Constructor.add_constructor(f"{_TAG}bool", _construct_bool)
_Constructor.yaml_implicit_resolvers = {}
_SCALARS = [
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("int", r"^[-+]?[0-9]+$", "-+0123456789"),
    (
        "float",
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+.0123456789",
    ),
]
for _name, _pattern, _first in _SCALARS:
    _Constructor.add_implicit_resolver(f"{_TAG}{_name}", re.compile(_pattern), list(_first))


if yaml.__with_libyaml__:
    from yaml._yaml import CParser

    class _Loader(_LimitedComposer, CParser, _Constructor):
        """libyaml's parser (fast, non-recursive) under the limited composer."""

        BYTE_POSITIONS = True  # a ReaderError's position counts UTF-8 bytes

        def __init__(self, text: str) -> None:
            CParser.__init__(self, text)
            _LimitedComposer.__init__(self)
            _Constructor.__init__(self)

else:  # pragma: no cover - PyYAML without libyaml
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Loader(_LimitedComposer, Reader, Scanner, Parser, _Constructor):  # type: ignore[no-redef]
        BYTE_POSITIONS = False

        def __init__(self, text: str) -> None:
            Reader.__init__(self, text)
            Scanner.__init__(self)
            Parser.__init__(self)
            _LimitedComposer.__init__(self)
            _Constructor.__init__(self)


def parse_yaml(text: str) -> tuple[Any, Node | None, list[Problem]]:
    """Decode one YAML document: the value, its node graph (for lines), and the problems."""
    loader: _Loader | None = None
    try:
        loader = _Loader(text)
        node = loader.get_single_node()
        if node is None:
            return None, None, []
        problems: list[Problem] = []
        _check_nodes(node, (), problems, set())
        if problems:
            return None, node, problems
        return loader.construct_document(node), node, []
    except RefusedError as exc:
        return None, None, [Problem(exc.loc, exc.message, line=exc.mark.line + 1)]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        if "maximum nesting depth" in str(exc.problem):  # libyaml's own limit, looking ahead
            return None, None, [Problem((), _too_deep(), line=line)]
        context = f" ({exc.context})" if exc.context and exc.problem else ""
        message = f"not valid YAML: {exc.problem or exc.context}{context}"
        return None, None, [Problem((), message, line=line)]
    except yaml.reader.ReaderError as exc:
        if _Loader.BYTE_POSITIONS:
            line = text.encode("utf-8")[: exc.position].count(b"\n") + 1
        else:
            line = text.count("\n", 0, exc.position) + 1
        reason = str(exc).split("\n", 1)[0]
        return None, None, [Problem((), f"not valid YAML: {reason}", line=line)]
    except UnicodeEncodeError as exc:
        line = text.count("\n", 0, exc.start) + 1
        return None, None, [Problem((), _surrogate_message(text[exc.start]), line=line)]
    except (yaml.YAMLError, ValueError) as exc:
        return None, None, [Problem((), f"not valid YAML: {exc}")]
    finally:
        if loader is not None:
            loader.dispose()


def _surrogate_message(char: str) -> str:
    return f"contains a lone surrogate U+{ord(char):04X}; text must be valid Unicode"


def _check_nodes(node: Node, loc: Loc, problems: list[Problem], seen: set[int]) -> None:
    """Keys that are not strings, duplicate keys and tags without a JSON meaning."""
    if id(node) in seen:  # an alias: its node was checked where the anchor is
        return
    seen.add(id(node))
    line = node.start_mark.line + 1
    wanted = _CONTAINER_TAGS.get(type(node))
    if (node.tag not in _SCALAR_TAGS) if wanted is None else (node.tag != wanted):
        problems.append(Problem(loc, f"unsupported YAML tag {_short(node.tag)}", line=line))
        return
    if isinstance(node, SequenceNode):
        for i, item in enumerate(node.value):
            _check_nodes(item, (*loc, i), problems, seen)
    elif isinstance(node, MappingNode):
        keys: set[str] = set()
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if not isinstance(key_node, ScalarNode) or key_node.tag != f"{_TAG}str":
                shown = _describe(key_node)
                problems.append(Problem(loc, f"keys must be strings; got {shown}", line=key_line))
                continue
            key = key_node.value
            if key in keys:
                problems.append(Problem((*loc, key), f"duplicate key {key!r}", line=key_line))
            keys.add(key)
            _check_nodes(value_node, (*loc, key), problems, seen)


def _describe(node: Node) -> str:
    if isinstance(node, ScalarNode):
        return repr(node.value)
    return "a sequence" if isinstance(node, SequenceNode) else "a mapping"


def _short(tag: str) -> str:
    return "!!" + tag[len(_TAG) :] if tag.startswith(_TAG) else tag


def line_in(root: Node, loc: Loc, cache: dict[int, dict[str, Node]]) -> int | None:
    """The line of ``loc`` in the node graph, or of its nearest ancestor there."""
    node = root
    for part in loc:
        child: Node | None = None
        if isinstance(node, MappingNode) and isinstance(part, str):
            keys = cache.get(id(node))
            if keys is None:
                keys = {k.value: v for k, v in node.value if isinstance(k, ScalarNode)}
                cache[id(node)] = keys
            child = keys.get(part)
        elif isinstance(node, SequenceNode) and isinstance(part, int) and part < len(node.value):
            child = node.value[part]
        if child is None:
            break
        node = child
    return int(node.start_mark.line) + 1
