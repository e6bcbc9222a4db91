"""Re-run our RFC 0246 legs live against the host a bundle is about, and set the live results
beside the signed rows: a signature proves who said it, a re-run checks it is still true.

The host is the bundle's ``discovery.url`` without its ``/.well-known/openwop`` path. Only
the legs this tool implements are re-run; a signed ``openwop.requirement.0246.*`` row we do
not implement is reported as not re-run, and one of our legs the bundle has no row for as
unsigned — neither is a disagreement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit, urlunsplit

from .harness import LEGS, ConformanceResult, Harness, HostUnreachableError

WELL_KNOWN: Final = "/.well-known/openwop"


class RerunError(ValueError):
    """The bundle does not name a host that can be re-run."""


@dataclass(frozen=True, slots=True)
class Compared:
    id: str
    signed: str | None  # None: the bundle has no row for this leg
    live: str | None  # None: this tool does not implement the requirement
    detail: str | None = None

    @property
    def agrees(self) -> bool:
        return self.signed is None or self.live is None or self.signed == self.live


@dataclass
class Rerun:
    host: str
    rows: list[Compared] = field(default_factory=list)
    unreachable: str | None = None

    @property
    def disagreements(self) -> list[Compared]:
        return [row for row in self.rows if not row.agrees]


def host_of(bundle: Mapping[str, Any]) -> str:
    """The base URL of the host the bundle names (``RerunError`` when it names none)."""
    discovery = bundle.get("discovery")
    url = discovery.get("url") if isinstance(discovery, Mapping) else None
    if not isinstance(url, str) or not url:
        raise RerunError("the bundle names no host: discovery.url is missing")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise RerunError("discovery.url is not an http(s) URL")
    path = parts.path.removesuffix(WELL_KNOWN).rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def compare(signed_rows: Sequence[Mapping[str, Any]], live: ConformanceResult) -> list[Compared]:
    """Each 0246 row, signed beside live, in the bundle's order then our unsigned legs."""
    by_leg = {leg.leg: leg for leg in live.legs}
    out: list[Compared] = []
    seen: set[str] = set()
    for row in signed_rows:
        rid = row.get("id")
        if (
            not isinstance(rid, str)
            or not rid.startswith("openwop.requirement.0246.")
            or (rid in seen)
        ):
            continue
        seen.add(rid)
        leg = by_leg.get(rid)
        signed = row.get("result") if isinstance(row.get("result"), str) else "<malformed>"
        out.append(Compared(rid, signed, leg.result if leg else None, leg.detail if leg else None))
    out += [
        Compared(leg, None, by_leg[leg].result, by_leg[leg].detail)
        for leg in LEGS
        if leg not in seen and leg in by_leg
    ]
    return out


def rerun(
    bundle: Mapping[str, Any],
    api_key: str,
    timeout_s: float = 120,
    require_behavior: bool = False,
) -> Rerun:
    host = host_of(bundle)
    results = bundle.get("results")
    rows = results.get("requirements") if isinstance(results, Mapping) else None
    signed = [r for r in rows if isinstance(r, Mapping)] if isinstance(rows, list) else []
    harness = Harness(host, api_key, timeout_s, require_behavior=require_behavior)
    try:
        live = harness.run()
    except HostUnreachableError as exc:
        return Rerun(host, [], str(exc))
    finally:
        harness.close()
    return Rerun(host, compare(signed, live))
