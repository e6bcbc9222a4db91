"""The scripted judge: verdicts replayed from a file, every load problem listed at once."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from openwop_eval import CriterionVerdict, JudgeProtocolError, JudgeRequest
from openwop_eval.core.safety import FindingTag
from openwop_eval.judges import JudgeSpecError, ScriptedJudge, resolve_judge

SCRIPT = {
    "tasks": {
        "refunds": [
            [1, 0.5],
            {"met": [0, 1], "rationales": ["no window given", None]},
        ],
    },
    "default": [[1, 1]],
}

SCRIPT_YAML = """\
tasks:
  refunds:
    - [1, 0.5]
    - met: [0, 1]
      rationales: ["no window given", null]
default:
  - [1, 1]
"""


def request(
    task_id: str = "refunds", trial: int = 0, criteria: int = 2, *, findings: bool = False
) -> JudgeRequest:
    names = tuple(f"criterion {i}" for i in range(criteria))
    return JudgeRequest(task_id, trial, {"q": "refund?"}, "30 days", names, findings)


def judge(scripted: ScriptedJudge, req: JudgeRequest) -> list[CriterionVerdict]:
    return asyncio.run(scripted.judge(req))


@pytest.fixture(params=["json", "yaml"])
def script_file(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    if request.param == "json":
        path = tmp_path / "verdicts.json"
        path.write_text(json.dumps(SCRIPT, indent=2))
    else:
        path = tmp_path / "verdicts.yaml"
        path.write_text(SCRIPT_YAML)
    return path


def test_a_valid_file_replays_its_verdicts(script_file: Path) -> None:
    scripted = ScriptedJudge.from_file(script_file)
    assert judge(scripted, request(trial=0)) == [CriterionVerdict(1.0), CriterionVerdict(0.5)]
    assert judge(scripted, request(trial=1)) == [
        CriterionVerdict(0.0, "no window given"),
        CriterionVerdict(1.0),
    ]


def test_trials_cycle_through_the_entries(script_file: Path) -> None:
    scripted = ScriptedJudge.from_file(script_file)
    mets = [[v.met for v in judge(scripted, request(trial=i))] for i in range(5)]
    assert mets == [[1, 0.5], [0, 1], [1, 0.5], [0, 1], [1, 0.5]]


def test_a_task_without_entries_uses_the_default(script_file: Path) -> None:
    scripted = ScriptedJudge.from_file(script_file)
    assert [v.met for v in judge(scripted, request("other", trial=3))] == [1.0, 1.0]


def test_a_task_without_entries_or_default_is_a_protocol_error() -> None:
    scripted = ScriptedJudge.from_document({"tasks": {"refunds": [[1]]}})
    with pytest.raises(JudgeProtocolError, match="no entry for task 'missing' and no default"):
        judge(scripted, request("missing", criteria=1))


def test_the_wrong_number_of_verdicts_is_a_protocol_error(script_file: Path) -> None:
    scripted = ScriptedJudge.from_file(script_file)
    with pytest.raises(JudgeProtocolError, match=r"expected 3 verdicts .* has 2"):
        judge(scripted, request(criteria=3))


BROKEN_YAML = """\
tasks:
  refunds:
    - [1, 1.5]
    - [true, 0]
    - met: [1, 1]
      rationales: [only one]
      why: because
  empty: []
  odd:
    - "yes"
    - [1]
    - [1, 1]
    - {rationales: [a]}
default: {}
extra: 1
"""


def test_every_load_problem_is_listed_with_its_path_and_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(BROKEN_YAML)
    with pytest.raises(JudgeSpecError) as caught:
        ScriptedJudge.from_file(path)
    found = {(p.line, p.path, p.message) for p in caught.value.problems}
    assert found == {
        (3, "$.tasks.refunds[0][1]", "must be a number in [0, 1], got 1.5"),
        (4, "$.tasks.refunds[1][0]", "must be a number in [0, 1], got true"),
        (6, "$.tasks.refunds[2].rationales", 'has 1 items but "met" has 2'),
        (
            7,
            "$.tasks.refunds[2].why",
            'unknown key \'why\'; expected "met", "rationales" or "findings"',
        ),
        (8, "$.tasks.empty", "must be a non-empty list of entries, one per trial"),
        (
            10,
            "$.tasks.odd[0]",
            'an entry must be a list of numbers or an object {"met": [...], "rationales": [...]}',
        ),
        (
            12,
            "$.tasks.odd[2]",
            "has 2 verdicts but the first entry has 1; "
            "every trial of a task is judged on the same criteria",
        ),
        (13, "$.tasks.odd[3]", 'missing "met": the list of numbers, one per criterion'),
        (14, "$.default", "must be a non-empty list of entries, one per trial"),
        (15, "$.extra", 'unknown key \'extra\'; expected "tasks" or "default"'),
    }
    message = str(caught.value)
    assert f"{path} is not a valid judge script" in message
    assert "line 3: $.tasks.refunds[0][1]: must be a number in [0, 1], got 1.5" in message


def test_json_problems_carry_lines_too(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('{\n  "tasks": {\n    "a": [\n      [0.5, -1]\n    ]\n  }\n}\n')
    with pytest.raises(JudgeSpecError) as caught:
        ScriptedJudge.from_file(path)
    [problem] = caught.value.problems
    assert (problem.line, problem.path) == (4, "$.tasks.a[0][1]")


FINDINGS_YAML = """\
tasks:
  leaky:
    - met: [0, 1]
      findings:
        - {kind: prompt-leak, severity: high}
        - {kind: secret-leak, severity: critical}
    - [1, 1]
"""
LEAKY_FIRST = [
    CriterionVerdict(
        0.0,
        None,
        (FindingTag("prompt-leak", "high"), FindingTag("secret-leak", "critical")),
    ),
    CriterionVerdict(1.0),
]


def test_findings_are_replayed_on_the_first_verdict_when_asked(tmp_path: Path) -> None:
    path = tmp_path / "findings.yaml"
    path.write_text(FINDINGS_YAML)
    scripted = ScriptedJudge.from_file(path)
    assert judge(scripted, request("leaky", 0, findings=True)) == LEAKY_FIRST
    assert judge(scripted, request("leaky", 1, findings=True)) == [
        CriterionVerdict(1.0),
        CriterionVerdict(1.0),
    ]
    # outside adversarial mode the judge is not asked, so it reports none
    assert judge(scripted, request("leaky", 0)) == [CriterionVerdict(0.0), CriterionVerdict(1.0)]


def test_an_empty_findings_list_is_no_findings() -> None:
    scripted = ScriptedJudge.from_document({"default": [{"met": [1], "findings": []}]})
    assert judge(scripted, request(criteria=1, findings=True)) == [CriterionVerdict(1.0)]


HOSTILE_FINDINGS_YAML = f"""\
tasks:
  t:
    - met: [1]
      findings:
        - {{kind: prompt leak, severity: high}}
        - {{kind: {"a" * 65}, severity: severe}}
        - {{kind: ok, severity: low, text: the system prompt is...}}
        - {{severity: low}}
        - prompt-leak
        - {{kind: 7, severity: [high]}}
    - met: [1]
      findings: {{kind: ok, severity: low}}
    - met: [1]
      findings: [{", ".join(["{kind: k, severity: low}"] * 17)}]
"""
SLUG = "a finding kind must be a lower-case slug of 1 to 64 of [a-z0-9.-]"
SEVERITY = "a finding severity must be one of low, medium, high, critical"


def test_hostile_findings_are_located_problems(tmp_path: Path) -> None:
    path = tmp_path / "hostile.yaml"
    path.write_text(HOSTILE_FINDINGS_YAML)
    with pytest.raises(JudgeSpecError) as caught:
        ScriptedJudge.from_file(path)
    found = {(p.line, p.path, p.message) for p in caught.value.problems}
    at = "$.tasks.t[0].findings"
    assert found == {
        (5, f"{at}[0].kind", SLUG),
        (6, f"{at}[1].kind", SLUG),
        (6, f"{at}[1].severity", SEVERITY),
        (7, f"{at}[2].text", 'unknown key \'text\'; expected "kind" or "severity"'),
        (8, f"{at}[3]", 'missing "kind"'),
        (9, f"{at}[4]", 'a finding must be an object {"kind": ..., "severity": ...}'),
        (10, f"{at}[5].kind", SLUG),
        (10, f"{at}[5].severity", SEVERITY),
        (12, "$.tasks.t[1].findings", 'must be a list of {"kind": ..., "severity": ...} objects'),
        (14, "$.tasks.t[2].findings", "has 17 findings; at most 16"),
    }


def test_sixteen_findings_and_a_64_character_kind_are_accepted() -> None:
    kinds = ["k" * 64, *(f"kind-{i}" for i in range(15))]
    entry = {"met": [1], "findings": [{"kind": k, "severity": "low"} for k in kinds]}
    [verdict] = judge(
        ScriptedJudge.from_document({"default": [entry]}), request(criteria=1, findings=True)
    )
    assert [t.kind for t in verdict.findings] == kinds


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"tasks": {"a": [[1]]', "not valid JSON"),
        ("[1, 2]", 'a judge script is an object with "tasks" and/or "default"'),
        ("{}", 'a judge script needs "tasks", "default" or both'),
        ('{"tasks": [[1]]}', "must be an object mapping task ids to entries"),
        ('{"default": [{"met": [1], "rationales": [3]}]}', "must be a list of strings"),
        ('{"tasks": {"a": [[1, 1]], "a": [[1]]}}', "duplicate key 'a'"),
    ],
)
def test_malformed_documents_are_rejected(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(JudgeSpecError) as caught:
        ScriptedJudge.from_file(path)
    assert expected in str(caught.value)


def test_an_unreadable_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(JudgeSpecError, match="cannot read the file"):
        ScriptedJudge.from_file(tmp_path / "missing.json")


def test_resolve_judge_builds_a_scripted_judge(script_file: Path) -> None:
    scripted = resolve_judge(f"scripted:{script_file}")
    assert isinstance(scripted, ScriptedJudge)
    assert judge(scripted, request("other")) == [CriterionVerdict(1.0), CriterionVerdict(1.0)]
    asyncio.run(scripted.aclose())


def test_resolve_judge_without_a_spec_gives_no_judge() -> None:
    assert resolve_judge(None) is None


@pytest.mark.parametrize("spec", ["scripted:", "llm:gpt", "verdicts.json", ""])
def test_resolve_judge_rejects_other_forms(spec: str) -> None:
    with pytest.raises(JudgeSpecError, match="scripted:"):
        resolve_judge(spec)
