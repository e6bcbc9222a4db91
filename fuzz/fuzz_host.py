"""Fuzz a real `openwop-eval serve` process with generated hostile requests, by hand.

    python -m fuzz.fuzz_host                       # 5,000 requests, SQLite
    python -m fuzz.fuzz_host --database postgres   # a fresh PostgreSQL database, dropped after
    python -m fuzz.fuzz_host --requests 50000 --seed 7 --concurrency 16

Every route of the route table gets hostile path ids, query parameters, headers and bodies,
on a loopback host with two tenants, a read-only key and gated promotions. A crash is a 5xx
or a broken connection (an SSE stream cut mid-response too), a hang no complete answer
within ``--timeout`` s, a violation a redirect, a 4xx without the error envelope or a gated
deployment no passing run admits. Exits 1 on any; prints ``requests sent / crashes / hangs`` last.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from starlette.routing import Route

from openwop_eval.protocol.ids import project
from openwop_eval.server.app import ROUTES
from openwop_eval.server.inputs import QUERY_PARAMETERS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "support-refunds"
FIXTURES = ROOT / "src" / "openwop_eval" / "conformance" / "fixtures"
MOCK, CAREFUL = "core.conformance.mock-agent", "acme.support-resolver"
GATE_SUITE = "core.conformance.evals.trajectory-gate@1.0.0"
REFUNDS_SUITE = "acme.support.evals.refunds@1.0.0"
KEYS = {"acme": "acme-key", "globex": "globex-key"}
ALL_KEYS = [*KEYS.values(), "acme-read-only"]
GATED = ("staged", "active")
CONFIG = f"""
suites = ["{EXAMPLE / "suite.yaml"}"]
conformance_fixtures = true
api_keys = [
  {{name = "acme-ci", tenant = "acme", key = "acme-key"}},
  {{name = "globex-ci", tenant = "globex", key = "globex-key"}},
  {{name = "reader", tenant = "acme", key = "acme-read-only", scopes = ["runs:read"]}},
]

[agents."{MOCK}"]
agent = "scripted:{FIXTURES / "conformance-mock-agent.json"}"
version = "1.0.0"

[agents."{CAREFUL}"]
agent = "{EXAMPLE / "agent.py"}:careful_support_agent"
judge = "scripted:{EXAMPLE / "judge.json"}"
version = "1.0.0"

[deployment]
gated_states = {json.dumps(list(GATED))}
required_suites = {{ "{MOCK}" = ["{GATE_SUITE}"], "{CAREFUL}" = ["{REFUNDS_SUITE}"] }}

[limits]
max_poll_wait_s = 2   # a long poll on a live run answers within 2 s
"""


@contextmanager
def postgres(admin: str) -> Iterator[str]:
    import psycopg

    name = f"openwop_eval_fuzz_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{admin.rsplit('/', 1)[0]}/{name}"
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def serve(database: str, work: Path) -> Iterator[tuple[str, Path]]:
    config, log = work / "host.toml", work / "host.log"
    config.write_text(CONFIG)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    command = [sys.executable, "-m", "openwop_eval", "serve", "--config", str(config)]
    command += ["--database", database, "--port", str(port), "--log-level", "warning"]
    with open(log, "ab") as err:  # a file, not a pipe: a full pipe would stall the host
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise SystemExit(f"the host exited:\n{log.read_text()}")
            try:
                if httpx.get(f"{url}/.well-known/openwop", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("the host did not start within 30 s")
            time.sleep(0.05)  # waiting for the process to listen
        yield url, log
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()


def run_to_end(client: httpx.Client, suite: str, agent: str, key: str) -> str:
    auth = {"Authorization": f"Bearer {key}"}
    body = {"mode": "eval", "evalSuiteRef": suite, "agentId": agent}
    created = client.post("/runs", json=body, headers=auth)
    created.raise_for_status()
    run_id: str = created.json()["runId"]
    for _ in range(300):  # each long poll waits for the run's next commit, at most 2 s
        page = client.get(
            f"/runs/{project(run_id)}/events/poll",
            params={"afterSequence": -1, "timeout": 2},
            headers=auth,
        )
        if page.json()["isTerminal"]:
            return run_id
    raise SystemExit(f"seed run {run_id} did not end")


# --- hostile requests -----------------------------------------------------------------------

SPECIAL = ["", "\x00", "~", "~0", "~ZZ", "~2F", "%", "%00", "%2F", "/", "..", "\ud800", " "]
NUMBERS = ["-1", "0", "1", str(2**31), str(2**63 - 1), str(2**63), str(2**64), "-2", "nan"]
NUMBERS += ["inf", "1e400", "1.5", " 1", "1_000", "0x10", "\u0661", "+1", "9" * 4400, "%00"]
QUERY_NAMES = list(QUERY_PARAMETERS)
CONTENT_TYPES = [b"application/json", b"text/plain", b"application/x-www-form-urlencoded"]


@dataclass
class Hostile:
    rng: random.Random
    pool: list[str]
    routes: list[tuple[str, list[str]]] = field(init=False)

    def __post_init__(self) -> None:
        self.routes = [
            (r.path, sorted((r.methods or set()) - {"HEAD"}))
            for r in ROUTES
            if isinstance(r, Route)
        ]

    def text(self) -> str:
        r = self.rng
        pick = r.random()
        if pick < 0.35:
            return "".join(
                chr(r.choice([r.randrange(128), r.randrange(0x110000)]))
                for _ in range(r.randrange(24))
            )
        if pick < 0.7:
            return r.choice(SPECIAL)
        if pick < 0.8:
            return r.choice("a0~/%é") * r.choice([101, 263, 3000])
        return r.choice([*self.pool, MOCK, CAREFUL, GATE_SUITE, "stable", "promote", "eval"])

    def number(self) -> str:
        r = self.rng
        return r.choice(NUMBERS) if r.random() < 0.7 else str(r.randrange(-(2**70), 2**70))

    def part(self, text: str, raw: bool) -> str:
        return quote(text.encode("utf-8", "surrogatepass"), safe="~%" if raw else "")

    def run_segment(self) -> str:
        r = self.rng
        known = r.choice(self.pool)
        pick = r.randrange(5)
        if pick < 2:
            return project(known) if pick == 0 else known.replace("/", "%2F")
        if pick == 2:
            return "acme~2F" + "".join(f"~{b:02X}" for b in r.randbytes(r.randrange(40)))
        tail = self.part(self.text(), raw=True)
        return (project(known) + tail if pick == 3 else tail) or "x"

    def agent_segment(self) -> str:
        r = self.rng
        if r.random() < 0.4:
            return r.choice([MOCK, CAREFUL, "nobody"])
        return self.part(self.text(), raw=r.random() < 0.5) or "x"

    def value(self, depth: int = 0) -> Any:
        r = self.rng
        pick = r.random()
        if depth < 4 and pick < 0.15:
            return [self.value(depth + 1) for _ in range(r.randrange(4))]
        if depth < 4 and pick < 0.3:
            return {self.text(): self.value(depth + 1) for _ in range(r.randrange(4))}
        scalars = [None, True, r.randrange(-(2**70), 2**70), r.random() * 10.0 ** r.randrange(308)]
        return r.choice([*scalars, float("nan"), float("inf"), self.text(), self.text()])

    def body(self) -> bytes | None:
        r = self.rng
        pick = r.random()
        fields: dict[str, Any]
        if pick < 0.3:
            fields = {
                "mode": "eval",
                "evalSuiteRef": r.choice([GATE_SUITE, REFUNDS_SUITE]),
                "agentId": r.choice([MOCK, CAREFUL]),
            }
            extra = ["fixtureRuns", "evalModes", "baselineRunId", "tenantId", "metadata", "tags"]
            for k in r.sample(extra, r.randrange(3)):
                fields[k] = r.choice(
                    [
                        self.value(),
                        {"matched-path": self.text()},
                        r.choice(self.pool),  # a real run: of the tenant or another's
                        r.sample(["golden", "rubric", "regression", "adversarial"], 2),
                    ]
                )
        elif pick < 0.6:
            fields = {
                "version": r.choice(["1.0.0", "2.0.0"]),
                "transition": r.choice(["promote", "pause", "deprecate", "rollback"]),
                "toState": r.choice(["test", "staged", "active", "paused"]),
                "evalRunId": r.choice(self.pool),
            }
            for k in r.sample([*fields, "channel", "reason"], r.randrange(3)):
                fields[k] = r.choice([self.value(), self.text(), project(r.choice(self.pool))])
        elif pick < 0.7:  # at the depth limit, over it, over the decoder's stack
            n = r.choice([64, 65, 1_000, 100_000])
            return r.choice([b"[" * n + b"]" * n, b'{"a":' * n + b"1" + b"}" * n])
        else:
            return r.choice(
                [None, r.randbytes(r.randrange(200)), json.dumps(self.value()).encode()]
            )
        raw = json.dumps(fields, allow_nan=True).encode()
        if fields and r.random() < 0.2:  # a key given twice: refused, whichever value
            key = r.choice(list(fields))
            again = json.dumps(r.choice([self.value(), r.choice(self.pool)]), allow_nan=True)
            raw = raw[:-1] + f", {json.dumps(key)}: {again}}}".encode()
        return raw

    @staticmethod
    def sendable(text: str) -> bytes:
        """What an HTTP/1.1 header can carry (h11 refuses to send anything else): no
        control bytes and no whitespace at either end."""
        raw = text.encode("utf-8", "surrogatepass")
        return bytes(b for b in raw if b > 0x20 and b != 0x7F) or b"x"

    def headers(self) -> list[tuple[bytes, bytes]]:
        r = self.rng
        odd = self.sendable(self.text())
        unusual = [b"Bearer", b"Basic YWNtZTprZXk=", b"bearer acme-key", b"Bearer " + odd]
        auth = f"Bearer {r.choice(ALL_KEYS)}".encode() if r.random() < 0.6 else r.choice(unusual)
        headers = [(b"Authorization", auth)] if r.random() < 0.95 else []
        optional = {
            b"Idempotency-Key": [b"k-1", b"k-2", odd],
            b"Last-Event-ID": [self.sendable(self.number())],
            b"Accept": [b"text/event-stream", b"*/*", odd],
            b"Content-Type": [*CONTENT_TYPES, odd],
            b"OpenWOP-Version": [b"2.0", b"2", b"3.0", odd],
        }
        for name in r.sample(list(optional), r.randrange(len(optional) + 1)):
            headers.append((name, r.choice(optional[name])))
        return headers

    def request(self) -> tuple[str, str, list[tuple[bytes, bytes]], bytes | None]:
        r = self.rng
        template, methods = r.choice(self.routes)
        if r.random() < 0.05:
            template, methods = "/" + self.part(self.text(), raw=True), ["GET", "POST", "DELETE"]
        path = template.replace("{run_id}", self.run_segment())
        path = path.replace("{agent_id}", self.agent_segment())
        method = r.choice(methods)
        names = r.sample(QUERY_NAMES, r.randrange(4))
        query = "&".join(
            f"{self.part(n, False)}={self.part(r.choice([self.number(), self.text()]), False)}"
            for n in names
        )
        body = self.body() if method == "POST" else None
        return method, f"{path}?{query}" if query else path, self.headers(), body


# --- sending and judging --------------------------------------------------------------------

Outcome = tuple[str, str]  # ("ok" | "crash" | "hang" | "violation" | "unsendable", detail)


def judge(client: httpx.Client, request: tuple[Any, ...], timeout: float) -> Outcome:
    method, url, headers, body = request
    where = f"{method} {url[:200]}"
    started = time.monotonic()
    try:
        with client.stream(method, url, headers=headers, content=body) as response:
            chunks = []
            for chunk in response.iter_bytes():  # SSE included: every stream here ends
                chunks.append(chunk)
                if time.monotonic() - started > timeout:
                    return "hang", f"{where}: the answer took over {timeout:g} s"
    except httpx.TimeoutException:
        return "hang", f"{where}: no answer within {timeout:g} s"
    except httpx.LocalProtocolError:  # refused by the client, so never sent
        return "unsendable", where
    except httpx.TransportError as exc:  # a stream cut mid-response lands here
        return "crash", f"{where}: {type(exc).__name__}: {exc}"
    text = b"".join(chunks)
    if response.status_code >= 500:
        return "crash", f"{where}: {response.status_code} {text[:200]!r}"
    if 300 <= response.status_code < 400 and response.status_code != 304:
        return "violation", f"{where}: a {response.status_code} redirect"
    if "location" in response.headers:
        return "violation", f"{where}: a Location header"
    if response.status_code >= 400 and not envelope(response, text):
        return "violation", f"{where}: {response.status_code} without the error envelope"
    return "ok", where


def envelope(response: httpx.Response, text: bytes) -> bool:
    try:
        body = json.loads(text)
    except ValueError:
        return False
    return (
        response.headers.get("content-type", "").startswith("application/json")
        and isinstance(body, dict)
        and set(body) <= {"error", "message", "details"}
        and all(isinstance(body.get(k), str) and body[k] for k in ("error", "message"))
    )


def gate_violations(client: httpx.Client, passing: dict[str, str]) -> list[str]:
    """Deployments in a gated state whose evalRunId is not the tenant's passing run."""
    found = []
    for tenant, key in KEYS.items():
        for agent in (MOCK, CAREFUL):
            auth = {"Authorization": f"Bearer {key}"}
            for record in client.get(f"/agents/{agent}/deployments", headers=auth).json():
                admitted = (
                    agent == CAREFUL
                    and record.get("evalRunId") == passing[tenant]
                    and record["version"] == "1.0.0"  # the version its run evaluated
                )
                if record["state"] in GATED and not admitted:
                    found.append(f"{tenant} {agent} {record}")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=5000, help="requests to send")
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument(
        "--pg-admin",
        default=os.environ.get("OPENWOP_EVAL_TEST_PG", "postgresql://postgres@127.0.0.1/postgres"),
        help="a PostgreSQL URL allowed to create and drop databases",
    )
    parser.add_argument("--seed", type=int, default=None, help="the stream of requests")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds before a hang")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight")
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    found: dict[str, list[str]] = defaultdict(list)
    with (
        tempfile.TemporaryDirectory(prefix="fuzz-host-") as tmp,
        database(args, Path(tmp)) as db,
        serve(db, Path(tmp)) as (url, log),
    ):
        limits = httpx.Limits(max_connections=args.concurrency * 2)
        with httpx.Client(base_url=url, timeout=args.timeout, limits=limits) as client:
            passing = {t: run_to_end(client, REFUNDS_SUITE, CAREFUL, k) for t, k in KEYS.items()}
            failing = run_to_end(client, GATE_SUITE, MOCK, KEYS["acme"])
            hostile = Hostile(random.Random(seed), [*passing.values(), failing])
            requests = [hostile.request() for _ in range(args.requests)]
            print(f"seed {seed}: {args.requests} requests to {url} on {args.database}")
            with ThreadPoolExecutor(args.concurrency) as workers:
                outcomes = workers.map(lambda q: judge(client, q, args.timeout), requests)
                for done, (kind, detail) in enumerate(outcomes, 1):
                    found[kind].append(detail)
                    if done % 1000 == 0:
                        print(f"  {done} judged", flush=True)
            found["violation"] += gate_violations(client, passing)
        logged = log.read_text(errors="replace").count("unhandled error")
    for kind in ("crash", "hang", "violation"):
        for line in found[kind][:20]:
            print(f"{kind}: {line}")
    sent = args.requests - len(found["unsendable"])
    crashes, hangs, violations = (len(found[k]) for k in ("crash", "hang", "violation"))
    print(
        f"{violations} contract violations; {logged} unhandled errors in the host log;"
        f" {len(found['unsendable'])} generated requests the client refused to send"
    )
    print(
        f"{sent} requests sent / {crashes} crashes (5xx or connection errors)"
        f" / {hangs} hangs (no answer within {args.timeout:g} s)"
    )
    return 1 if crashes or hangs or violations or logged or sent < args.requests else 0


@contextmanager
def database(args: argparse.Namespace, tmp: Path) -> Iterator[str]:
    if args.database == "sqlite":
        yield f"sqlite:///{tmp / 'host.sqlite'}"
    else:
        with postgres(args.pg_admin) as url:
            yield url


if __name__ == "__main__":
    sys.exit(main())
