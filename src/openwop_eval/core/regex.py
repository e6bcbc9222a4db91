"""Regular expressions from suites: RE2 syntax, linear-time matching, no fallback.

Every regular expression that comes from a suite (``$regex`` matchers, and ``pattern`` and
``patternProperties`` inside ``$schema`` matchers) is compiled here and nowhere else. RE2 runs
in time linear in the text and never backtracks, so a pattern such as ``(a+)+$`` cannot stall
grading. What RE2 cannot run (backreferences, lookaround, atomic groups, possessive
quantifiers, conditionals…) is a :class:`RegexError` at validate time, with what to write
instead; there is no silent fallback to Python's backtracking :mod:`re`.

Texts are Python strings of code points, encoded to UTF-8 for RE2; a lone surrogate (which
JSON can carry, as ``"\\ud800"``) is passed through as its three-byte form, so matching never
raises on any string.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Final

import re2

MAX_MEM: Final = 8 << 20
"""Bytes RE2 may spend on one compiled pattern (its default); a larger pattern is rejected."""


class RegexError(ValueError):
    """A pattern RE2 cannot compile; the message says why and what to write instead."""


@dataclass(frozen=True, slots=True)
class Regex:
    """A compiled RE2 pattern; :meth:`search` is unanchored, like :func:`re.search`."""

    source: str
    _compiled: Any = field(repr=False, compare=False)

    def search(self, text: str) -> bool:
        """True when the pattern is found anywhere in ``text`` (anchor with ``^…$``)."""
        return self._compiled.search(_utf8(text)) is not None


def compile_regex(source: str) -> Regex:
    """Compile ``source`` as an RE2 pattern, or raise :class:`RegexError`."""
    return _compile(source)


@lru_cache(maxsize=512)
def _compile(source: str) -> Regex:
    options = re2.Options()
    options.log_errors = False  # RE2 would otherwise write every bad pattern to stderr
    options.max_mem = MAX_MEM
    try:
        return Regex(source, re2.compile(_utf8(source), options))
    except re2.error as exc:
        detail = exc.args[0].decode("utf-8", "replace") if exc.args else "invalid pattern"
        raise RegexError(_explain(source, detail)) from None


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


# (what appears in the pattern or RE2's message, why RE2 refuses it and what to write instead)
_HINTS: Final = (
    (("(?=", "(?!"), "RE2 has no lookahead; match the following text itself, or drop it"),
    (("(?<=", "(?<!"), "RE2 has no lookbehind; match the preceding text itself, or drop it"),
    (
        ("(?P=", "\\1", "\\2", "\\3", "\\4", "\\5", "\\6", "\\7", "\\8", "\\9", "\\g<", "\\k<"),
        "RE2 has no backreferences; repeat the group's pattern instead",
    ),
    (
        ("(?>", "*+", "++", "?+", "}+"),
        "RE2 never backtracks, so atomic groups and possessive quantifiers are not needed;"
        " write (...) and *, +, ? instead",
    ),
    (("(?(",), "RE2 has no conditional groups; use an alternation (a|b)"),
    (("\\Z",), "write \\z for the end of the text"),
    (("\\u", "\\U", "\\N{"), "write \\x{00E9} for a code point, or the character itself"),
    (("(?x", "(?a", "(?L", "(?u"), "RE2 supports only the flags i, m, s and U"),
    (("repetition size",), "RE2 allows repetition counts up to 1000"),
    (("pattern too large",), f"the compiled pattern exceeds RE2's {MAX_MEM >> 20} MiB limit"),
)


def _explain(source: str, detail: str) -> str:
    # RE2's message names the first construct it refused; the pattern text is the fallback
    # for messages too terse to tell (a named backreference reads "invalid perl operator: (?P").
    hint = next(
        (
            why
            for text in (detail, source)
            for needles, why in _HINTS
            if any(needle in text for needle in needles)
        ),
        None,
    )
    text = f"RE2: {detail}" if hint is None else f"RE2: {detail}; {hint}"
    return f"not a valid regular expression ({text}): {source!r}"
