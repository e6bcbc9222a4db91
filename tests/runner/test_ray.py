"""Trials on Ray: the summaries of the local executor, a worker killed mid-trial included.

One local Ray for the module (``ray.init(num_cpus=2)``, no cluster). Without Ray installed
the tests that need it skip, saying so; CI installs it (the ``test`` extra).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from openwop_eval.agents import AgentReply, TrialContext, resolve_agent
from openwop_eval.agents.base import ToolPort
from openwop_eval.files.suites import load_suite
from openwop_eval.judges import resolve_judge
from openwop_eval.log import verify_log
from openwop_eval.runner import (
    RunError,
    RunOptions,
    RunService,
    RunSpec,
    resume_async,
    run_suite,
)
from openwop_eval.runner.ray_executor import RayExecutor
from openwop_eval.server.catalog import Catalog
from openwop_eval.server.config import AgentConfig, ConfigError, HostConfig, load_config
from openwop_eval.server.hub import Hub
from openwop_eval.server.manager import RunManager
from openwop_eval.store import Store
from tests.runner.conftest import Ran, write

try:
    import ray
except ImportError:  # pragma: no cover - CI installs it
    ray = None

NO_RAY = "Ray is not installed (pip install 'openwop-eval[ray]'); CI installs it"

AGENT = """
import os
from openwop_eval.agents import AgentReply

CRASH = {crash!r}   # (task, trial, marker file): that trial's first attempt kills its worker

def agent(input, tools):
    task, trial = input["task"], tools.context.trial
    if CRASH and [task, trial] == CRASH[:2] and not os.path.exists(CRASH[2]):
        open(CRASH[2], "w").close()
        os._exit(1)                      # the worker process dies mid-trial, no cleanup
    if task == "lookup":
        tools.call("crm:lookup", {{"order": trial}})
        if trial == 1:
            tools.call("accounts:delete", {{}})  # a forbidden step: the trajectory fails
        return AgentReply(output="wrong" if trial == 2 else "refunded", latency_ms=30)
    if task == "miss":
        tools.call("crm:lookup", {{}})
        tools.call("crm:missing", {{}})    # no fixture answers it: a miss fails the trial
    if task == "boom" and trial == 1:
        raise RuntimeError("boom")
    return AgentReply(output="ok" if task != "judged" else "an answer", cost_usd=0.01)
"""

SCRIPT = {
    "agentId": "test.scripted",
    "tasks": {
        "lookup": [
            {"output": "refunded", "toolCalls": [{"tool": "crm:lookup"}], "latencyMs": 30},
            {
                "output": "refunded",
                "toolCalls": [{"tool": "crm:lookup"}, {"tool": "accounts:delete"}],
            },
            {"output": "wrong", "toolCalls": [{"tool": "crm:lookup"}], "costUsd": 0.5},
        ],
        "miss": [{"toolCalls": [{"tool": "crm:lookup"}, {"tool": "crm:missing"}]}],
        "boom": [{"output": "ok"}, {"error": "boom"}, {"output": "ok"}],
        "judged": [{"output": "an answer", "latencyMs": 7}],
    },
}
JUDGE = {"tasks": {"judged": [[1, 1], [1, 0], [0, 0]]}}
FIXTURES = {
    "toolResponses": [
        {"tool": "crm:lookup", "response": {"status": "delivered"}},
        {"tool": "accounts:delete", "response": {}},
    ]
}


def suite() -> dict[str, Any]:
    def golden(name: str, value: str, trajectory: dict[str, Any] | None = None) -> dict[str, Any]:
        expected: dict[str, Any] = {
            "kind": "golden",
            "match": {"strategy": "exact", "value": value},
        }
        if trajectory:
            expected["trajectory"] = trajectory
        return {"taskId": name, "input": {"task": name}, "expected": expected, "fixtures": FIXTURES}

    rubric = {
        "taskId": "judged",
        "input": {"task": "judged"},
        "expected": {
            "kind": "rubric",
            "rubric": [
                {"criterion": "helpful", "weight": 0.6},
                {"criterion": "honest", "weight": 0.4},
            ],
        },
    }
    return {
        "suiteId": "test.openwop.evals.ray",
        "version": "1.0.0",
        "modes": ["golden", "rubric"],
        "thresholds": {"passScore": 0.5},
        "trials": {"count": 3, "passRule": "mean"},
        "tasks": [
            golden(
                "lookup",
                "refunded",
                {"steps": [{"tool": "crm:lookup"}], "forbidden": ["accounts:delete"]},
            ),
            golden("miss", "ok"),
            golden("boom", "ok"),
            rubric,
        ],
    }


TRIALS = {(task, i) for task in ("lookup", "miss", "boom", "judged") for i in range(3)}


@pytest.fixture(scope="module")
def local_ray() -> Iterator[None]:
    if ray is None:
        if os.environ.get("CI") == "true":  # CI installs the test extra: Ray must be there
            pytest.fail(NO_RAY)
        pytest.skip(NO_RAY)
    ray.init(address="local", num_cpus=2, include_dashboard=False)
    yield
    ray.shutdown()


@pytest.fixture
def files(tmp_path: Path) -> Callable[..., dict[str, Path]]:
    """The suite, the judge and both agents; ``crash`` names a trial whose first attempt
    kills its worker (a marker file remembers the attempt, so a retry plays normally)."""

    def make(crash: tuple[str, int] | None = None) -> dict[str, Path]:
        marker = tmp_path / "crashed"
        target = [crash[0], crash[1], str(marker)] if crash else None
        return {
            "suite": write(tmp_path / "suite.json", suite()),
            "judge": write(tmp_path / "judge.json", JUDGE),
            "script": write(tmp_path / "script.json", SCRIPT),
            "agent": write(tmp_path / "agent.py", AGENT.format(crash=target)),
            "marker": marker,
        }

    return make


def play(
    paths: dict[str, Path], agent: str, store: Store, executor: RayExecutor | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A run's summary and its log."""
    result = run_suite(
        load_suite(paths["suite"]),
        agent,
        store=store,
        options=RunOptions(concurrency=4),
        judge=resolve_judge(f"scripted:{paths['judge']}"),
        executor=executor,
    )
    return result.summary, list(store.iter_events(result.run_id))


def same(summary: dict[str, Any]) -> dict[str, Any]:
    """The summary less its measured latencies: a trial whose agent failed reports none,
    so it has the clock's, which no two runs share wherever they play."""
    return {
        **summary,
        "tasks": [{k: v for k, v in t.items() if k != "latencyMs"} for t in summary["tasks"]],
    }


def scores(log: list[dict[str, Any]]) -> dict[tuple[str, int], tuple[float, bool]]:
    """Each trial's verdict; refuses a trial scored twice."""
    found: dict[tuple[str, int], tuple[float, bool]] = {}
    for event in log:
        if event["type"] == "eval.scored":
            payload = event["payload"]
            key = (payload["taskId"], payload["x-openwop-eval"]["trial"])
            assert key not in found, f"{key} was scored twice"
            found[key] = (payload["score"], payload["passed"])
    return found


@pytest.mark.usefixtures("local_ray")
@pytest.mark.parametrize("form", ["python-file", "scripted"])
def test_ray_summaries_equal_the_local_executors(
    form: str, files: Callable[..., dict[str, Path]], tmp_path: Path
) -> None:
    paths = files()
    agent = f"{paths['agent']}:agent" if form == "python-file" else f"scripted:{paths['script']}"
    local, local_log = play(paths, agent, Store(f"sqlite:///{tmp_path / 'local.sqlite'}"))
    on_ray, ray_log = play(
        paths, agent, Store(f"sqlite:///{tmp_path / 'ray.sqlite'}"), RayExecutor()
    )
    assert same(on_ray) == same(local)
    assert scores(ray_log) == scores(local_log)
    assert set(scores(ray_log)) == TRIALS
    # What the suite exercises: a trajectory failure, a miss, an error, a judged rubric.
    verdicts = {t["taskId"]: t for t in on_ray["tasks"]}
    assert not verdicts["miss"]["passed"]
    assert verdicts["boom"]["trials"]["trialStats"]["passed"] == 2
    assert verdicts["lookup"]["trials"]["trialStats"]["passed"] == 1
    assert 0 < verdicts["judged"]["score"] < 1


@pytest.mark.usefixtures("local_ray")
def test_a_worker_killed_mid_trial_is_retried_and_counted_once(
    files: Callable[..., dict[str, Path]], tmp_path: Path
) -> None:
    paths = files(crash=("lookup", 1))
    agent = f"{paths['agent']}:agent"
    paths["marker"].touch()  # in process the agent must not kill the test
    local, local_log = play(paths, agent, Store(f"sqlite:///{tmp_path / 'local.sqlite'}"))
    paths["marker"].unlink()
    store = Store(f"sqlite:///{tmp_path / 'ray.sqlite'}")
    on_ray, ray_log = play(paths, agent, store, RayExecutor(max_retries=1))
    assert paths["marker"].exists()  # the first attempt did kill its worker
    assert same(on_ray) == same(local)
    assert scores(ray_log) == scores(local_log)  # one eval.scored per trial
    assert len([e for e in ray_log if e["type"] == "eval.scored"]) == len(TRIALS)


@pytest.mark.usefixtures("local_ray")
def test_past_its_retries_a_dead_worker_is_an_error_of_its_trial(
    files: Callable[..., dict[str, Path]], tmp_path: Path
) -> None:
    paths = files(crash=("judged", 0))
    agent = f"{paths['agent']}:agent"
    paths["marker"].touch()
    local, local_log = play(paths, agent, Store(f"sqlite:///{tmp_path / 'local.sqlite'}"))
    paths["marker"].unlink()
    store = Store(f"sqlite:///{tmp_path / 'ray.sqlite'}")
    on_ray, ray_log = play(paths, agent, store, RayExecutor(max_retries=0))
    (run,) = store.list_runs()
    assert run.status == "completed"
    expected = {**scores(local_log), ("judged", 0): (0.0, False)}
    assert scores(ray_log) == expected  # that trial failed; every other one as in process
    others = [t for t in same(on_ray)["tasks"] if t["taskId"] != "judged"]
    assert others == [t for t in same(local)["tasks"] if t["taskId"] != "judged"]
    completed = [
        e["payload"]
        for e in ray_log
        if e["type"] == "agent.invocation-completed"
        and e["payload"]["x-openwop-eval"].get("error") == "exception"
    ]
    assert len(completed) == 2  # the dead worker's trial, and the agent's own error (boom)
    diagnostics = store.trial_results(run.run_id)[("judged", 0)]
    assert diagnostics["error"].startswith("WorkerDiedError: the worker running the trial died")
    verification = verify_log(load_suite(paths["suite"]).suite, ray_log, on_ray)
    assert verification.agrees
    assert not verification.log_problems


@pytest.mark.usefixtures("local_ray")
def test_a_run_resumes_on_ray(files: Callable[..., dict[str, Path]], tmp_path: Path) -> None:
    paths = files()
    agent = f"{paths['agent']}:agent"
    local, local_log = play(paths, agent, Store(f"sqlite:///{tmp_path / 'local.sqlite'}"))
    store = Store(f"sqlite:///{tmp_path / 'ray.sqlite'}")
    judge = resolve_judge(f"scripted:{paths['judge']}")
    request = RunSpec(load_suite(paths["suite"]), resolve_agent(agent), agent, judge=judge)
    run_id = RunService(store).start(request).run_id  # created, never executed
    resumed = asyncio.run(resume_async(run_id, store=store, judge=judge, executor=RayExecutor()))
    assert same(resumed.summary) == same(local)
    assert scores(list(store.iter_events(run_id))) == scores(local_log)


class _Locked:
    """An agent that holds a lock: it cannot travel to a Ray worker."""

    agent_id = "test.locked"

    def __init__(self) -> None:
        self.lock = threading.Lock()

    async def run(self, context: TrialContext, port: ToolPort) -> AgentReply:
        return AgentReply("ok")


@pytest.mark.usefixtures("local_ray")
def test_an_agent_that_cannot_be_pickled_is_refused_before_the_run_starts(
    files: Callable[..., dict[str, Path]], store: Store
) -> None:
    paths = files()
    with pytest.raises(RunError, match="the agent cannot be sent to Ray workers"):
        run_suite(
            load_suite(paths["suite"]),
            _Locked(),
            store=store,
            judge=resolve_judge(f"scripted:{paths['judge']}"),
            executor=RayExecutor(),
        )
    assert store.list_runs() == []  # nothing was stored


def test_without_ray_the_executor_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(RunError, match=r"openwop-eval\[ray\]"):
        RayExecutor().connect()


# --- the command line and the host --------------------------------------------------------


@pytest.mark.usefixtures("local_ray")
def test_run_with_executor_ray(
    files: Callable[..., dict[str, Path]], run_cli: Callable[..., Ran]
) -> None:
    paths = files()
    common = [str(paths["suite"]), "--agent", f"{paths['agent']}:agent"]
    judge = ["--judge", f"scripted:{paths['judge']}"]
    local = run_cli(*common, *judge)
    on_ray = run_cli(*common, *judge, "--executor", "ray")
    assert on_ray.exit_code == local.exit_code == 1, on_ray.stderr  # the suite is failed
    assert on_ray.summary is not None
    assert local.summary is not None
    assert same(on_ray.summary) == same(local.summary)
    assert scores(on_ray.events) == scores(local.events)


def test_ray_address_needs_executor_ray(
    files: Callable[..., dict[str, Path]], run_cli: Callable[..., Ran]
) -> None:
    paths = files()
    ran = run_cli(
        str(paths["suite"]), "--agent", f"{paths['agent']}:agent", "--ray-address", "ray://h:1"
    )
    assert ran.exit_code == 2
    assert "--executor ray" in ran.stderr


def test_host_config_validates_the_executor(tmp_path: Path) -> None:
    assert HostConfig(executor="ray", ray_address="ray://head:10001").executor == "ray"
    with pytest.raises(ValueError, match="ray_address"):
        HostConfig(ray_address="ray://head:10001")
    config = write(tmp_path / "host.toml", 'executor = "slurm"\n')
    with pytest.raises(ConfigError, match="executor"):
        load_config(config)


@pytest.mark.usefixtures("local_ray")
def test_a_host_with_executor_ray_plays_its_runs_on_ray(
    files: Callable[..., dict[str, Path]], store: Store
) -> None:
    paths = files()
    config = HostConfig(
        suites=(str(paths["suite"]),),
        agents={
            "test.agent": AgentConfig(
                agent=f"{paths['agent']}:agent", judge=f"scripted:{paths['judge']}"
            )
        },
        executor="ray",
    )
    catalog = Catalog(config)
    manager = RunManager(store, catalog, Hub())
    assert isinstance(manager.executor, RayExecutor)
    served = catalog.suite("test.openwop.evals.ray@1.0.0")
    assert served is not None

    async def go() -> dict[str, Any]:
        spec = manager.spec("acme", {"kind": "test"}, served, catalog.agents["test.agent"], {})
        active = manager.prepare(spec)
        return (await active.execute()).summary

    on_ray = asyncio.run(go())
    local, _ = play(
        paths, f"{paths['agent']}:agent", Store(store.url.replace(".sqlite", "2.sqlite"))
    )
    assert same(on_ray) == same(local)
    assert json.dumps(on_ray)  # a plain summary


@pytest.mark.usefixtures("local_ray")
def test_conversations_on_ray_equal_the_local_executors(tmp_path: Path) -> None:
    from tests.conversations.suites import CAREFUL, HASTY, TASK
    from tests.conversations.suites import suite as conversation_suite

    path = write(tmp_path / "suite.json", conversation_suite(TASK, trials={"count": 2}))
    for name, source in (("careful", CAREFUL), ("hasty", HASTY)):
        agent = f"{write(tmp_path / f'{name}.py', source)}:agent"
        runs = []
        for where, executor in (("local", None), ("ray", RayExecutor())):
            store = Store(f"sqlite:///{tmp_path / f'{name}-{where}.sqlite'}")
            result = run_suite(load_suite(path), agent, store=store, executor=executor)
            log = list(store.iter_events(result.run_id))
            turns = [
                (e["payload"]["role"], e["payload"]["x-openwop-eval"]["turn"])
                for e in log
                if e["type"] == "agent.message"
            ]
            runs.append((same(result.summary), scores(log), turns))
        assert runs[0] == runs[1]
        assert len(runs[1][2]) == 2 * 2 * 3  # two trials of three turns, every message kept
