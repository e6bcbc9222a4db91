"""A seeded corpus of recorded trials: T refund tasks × n trials, each trial clean or carrying
one defect, each with the verdict the semantics require for its task's configuration.

The corpus is tool-neutral (plain dataclasses that dump to JSON); adapters turn it into our
trial records (``ours.py``) and into the peers' inputs (``peers.py``). Expected verdicts come
from the hand-written table in ``verdicts.py``, never from a grader.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from bench.grading.verdicts import (
    AGENT_ERROR,
    CLEAN,
    DEFECTS,
    DUPLICATE,
    EXTRA_ALLOWED,
    EXTRA_FORBIDDEN,
    EXTRA_KEY,
    FIXTURE_MISS,
    MISSING_STEP,
    NUMERIC_INSIDE,
    NUMERIC_OUTSIDE,
    REORDER,
    WRONG_VALUE,
    amount_in_range,
    expected_trial_pass,
)

SUITE_ID = "bench.openwop.evals.refunds"
ORDERS = ("exact", "in-order", "any-order")
ARGS_MATCHES = ("subset", "exact")
FORBIDDEN_SETS: tuple[tuple[str, ...], ...] = (
    ("accounts:delete",),
    ("accounts:*",),
    ("accounts:delete", "payments:void"),
)
# Extra calls that no task names as a step and no forbidden list (or glob) covers.
ALLOWED_EXTRAS = ("kb:search", "crm:add_note")
REASONS = ("damaged", "late", "wrong-item")
CURRENCIES = ("USD", "EUR", "GBP")
# At least 2 cents, so an exclusive range holds an amount other than the nominal one.
TOLERANCES_CENTS = (2, 50, 100, 250)
# Fraction of a task's trials that carry a failing defect; a task's pass^k follows from it.
FAIL_RATES = (0.0, 0.0, 0.0, 0.2, 0.2, 0.4, 0.6, 1.0)
BENIGN_RATE = 0.35  # chance that a passing trial carries a defect its configuration allows


@dataclass(frozen=True)
class Call:
    tool: str
    args: dict[str, Any]
    missed: bool = False


@dataclass(frozen=True)
class Trial:
    index: int
    defect: str
    calls: tuple[Call, ...]
    output: str | None
    error: str | None
    expected_pass: bool
    expected_score: float


@dataclass(frozen=True)
class RefundRange:
    """The refund amount a task accepts, in integer cents so membership is exact."""

    nominal: int
    low: int
    high: int
    inclusive: bool

    def matcher(self) -> dict[str, float]:
        lo, hi = ("$gte", "$lte") if self.inclusive else ("$gt", "$lt")
        return {lo: self.low / 100, hi: self.high / 100}


@dataclass(frozen=True)
class Task:
    task_id: str
    order: str
    args_match: str
    forbidden: tuple[str, ...]
    steps: tuple[dict[str, Any], ...]
    """The suite's trajectory steps, matchers included."""
    reference: tuple[Call, ...]
    """The concrete clean path: what a peer is given as its reference trajectory."""
    golden: str
    input: dict[str, Any]
    amount: RefundRange
    trials: tuple[Trial, ...]

    @property
    def expected_passes(self) -> int:
        return sum(t.expected_pass for t in self.trials)

    def trajectory(self) -> dict[str, Any]:
        return {
            "steps": [dict(s) for s in self.steps],
            "order": self.order,
            "forbidden": list(self.forbidden),
            "argsMatch": self.args_match,
        }


@dataclass(frozen=True)
class Corpus:
    seed: int
    trials_per_task: int
    pass_score: float
    k: int | None
    tasks: tuple[Task, ...] = field(repr=False)

    @property
    def trial_count(self) -> int:
        return len(self.tasks) * self.trials_per_task

    def suite(self, pass_rule: str) -> dict[str, Any]:
        """The OpenWOP suite document for this corpus under one suite-wide pass rule."""
        trials: dict[str, Any] = {"count": self.trials_per_task, "passRule": pass_rule}
        if self.k is not None:
            trials["k"] = self.k
        return {
            "suiteId": SUITE_ID,
            "version": "1.0.0",
            "modes": ["golden"],
            "thresholds": {"passScore": self.pass_score},
            "trials": trials,
            "tasks": [
                {
                    "taskId": t.task_id,
                    "input": t.input,
                    "expected": {
                        "kind": "golden",
                        "match": {"strategy": "exact", "value": t.golden},
                        "trajectory": t.trajectory(),
                    },
                }
                for t in self.tasks
            ],
        }

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def build_corpus(
    tasks: int, trials: int, seed: int, pass_score: float = 0.6, k: int | None = None
) -> Corpus:
    if tasks < 1 or trials < 1:
        raise ValueError("need at least one task and one trial per task")
    if k is not None and not 1 <= k <= trials:
        raise ValueError(f"k must be between 1 and {trials}")
    rng = random.Random(seed)
    built = tuple(_task(rng, i, trials) for i in range(tasks))
    return Corpus(seed, trials, pass_score, k, built)


# --- one task -----------------------------------------------------------------------------


def _task(rng: random.Random, i: int, n: int) -> Task:
    order = rng.choice(ORDERS)
    args_match = rng.choice(ARGS_MATCHES)
    forbidden = rng.choice(FORBIDDEN_SETS)
    order_id = f"A{rng.randrange(10_000, 100_000)}"
    nominal = rng.randrange(1_000, 100_000)
    tol = rng.choice(TOLERANCES_CENTS)
    amount = RefundRange(nominal, nominal - tol, nominal + tol, rng.random() < 0.5)
    steps, reference = _reference(rng, order_id, amount)
    task = Task(
        task_id=f"t-{i + 1:05d}",
        order=order,
        args_match=args_match,
        forbidden=forbidden,
        steps=steps,
        reference=reference,
        golden=f"refund issued for {order_id}",
        input={"orderId": order_id, "message": f"Please refund order {order_id}."},
        amount=amount,
        trials=(),
    )
    return replace(task, trials=_trials(rng, task, n))


def _reference(
    rng: random.Random, order_id: str, amount: RefundRange
) -> tuple[tuple[dict[str, Any], ...], tuple[Call, ...]]:
    """The steps (with matchers) and the concrete clean calls, 2 to 4 of them."""
    currency = rng.choice(CURRENCIES)
    other = rng.choice([c for c in CURRENCIES if c != currency])
    reason = rng.choice(REASONS)
    email = f"c{rng.randrange(100, 1000)}@example.com"
    pairs: list[tuple[dict[str, Any], Call]] = [
        (
            {"tool": "crm:lookup_order", "args": {"order_id": order_id}},
            Call("crm:lookup_order", {"order_id": order_id}),
        )
    ]
    shape = rng.randrange(3)  # 0: lookup → refund; 1: + eligibility; 2: + eligibility, receipt
    if shape >= 1:
        pairs.append(
            (
                {
                    "tool": "policy:check_eligibility",
                    "args": {"order_id": order_id, "reason": reason},
                },
                Call("policy:check_eligibility", {"order_id": order_id, "reason": reason}),
            )
        )
    pairs.append(
        (
            {
                "tool": "payments:refund",
                "args": {
                    "order_id": order_id,
                    "amount": amount.matcher(),
                    "currency": {"$in": sorted([currency, other])},
                },
            },
            Call(
                "payments:refund",
                {
                    "order_id": order_id,
                    "amount": amount.nominal / 100,
                    "currency": currency,
                },
            ),
        )
    )
    if shape == 2:
        pairs.append(
            (
                {
                    "tool": "email:send_receipt",
                    "args": {"order_id": order_id, "to": {"$regex": r"^[a-z0-9.]+@example\.com$"}},
                },
                Call("email:send_receipt", {"order_id": order_id, "to": email}),
            )
        )
    return tuple(s for s, _ in pairs), tuple(c for _, c in pairs)


def _trials(rng: random.Random, task: Task, n: int) -> tuple[Trial, ...]:
    # Exactly round(rate·n) trials fail, so the task's pass count c, and with it pass@k and
    # pass^k, is fixed before any defect is drawn.
    failing = set(rng.sample(range(n), round(rng.choice(FAIL_RATES) * n)))
    fails = [d for d in DEFECTS if not expected_trial_pass(d, task.order, task.args_match)]
    benign = [
        d for d in DEFECTS if d != CLEAN and expected_trial_pass(d, task.order, task.args_match)
    ]
    trials = []
    for index in range(n):
        if index in failing:
            defect = rng.choice(fails)
        elif rng.random() < BENIGN_RATE:
            defect = rng.choice(benign)
        else:
            defect = CLEAN
        trials.append(_trial(rng, task, index, defect))
    return tuple(trials)


def _trial(rng: random.Random, task: Task, index: int, defect: str) -> Trial:
    calls, error = _apply(rng, task, defect)
    expected = expected_trial_pass(defect, task.order, task.args_match)
    if defect in (NUMERIC_INSIDE, NUMERIC_OUTSIDE):
        # The drawn amount decides the verdict; recheck it in integer cents.
        refund = next(c for c in calls if c.tool == "payments:refund")
        cents = round(refund.args["amount"] * 100)
        r = task.amount
        if amount_in_range(cents, r.low, r.high, r.inclusive) is not expected:
            raise AssertionError(f"{task.task_id}: amount {cents} drawn for {defect}")
    closed = defect in (FIXTURE_MISS, AGENT_ERROR)
    return Trial(
        index=index,
        defect=defect,
        calls=calls,
        output=None if error else task.golden,
        error=error,
        expected_pass=expected,
        expected_score=0.0 if closed else 1.0,
    )


def _apply(rng: random.Random, task: Task, defect: str) -> tuple[tuple[Call, ...], str | None]:
    """The clean path with ``defect`` applied, and the agent error if there is one."""
    calls = list(task.reference)
    order_id = task.input["orderId"]
    if defect == REORDER:
        i = rng.randrange(len(calls) - 1)
        calls[i], calls[i + 1] = calls[i + 1], calls[i]
    elif defect == MISSING_STEP:
        del calls[rng.randrange(len(calls))]
    elif defect == DUPLICATE:
        i = rng.randrange(len(calls))
        calls.insert(i + 1, calls[i])
    elif defect == EXTRA_ALLOWED:
        tool = rng.choice(ALLOWED_EXTRAS)
        args = (
            {"query": "refund policy"}
            if tool == "kb:search"
            else {"order_id": order_id, "text": "customer asked for a refund"}
        )
        calls.insert(rng.randrange(len(calls) + 1), Call(tool, args))
    elif defect == EXTRA_FORBIDDEN:
        calls.insert(rng.randrange(len(calls) + 1), _forbidden_call(rng, task))
    elif defect == WRONG_VALUE:
        i = rng.randrange(len(calls))
        wrong = f"A{rng.randrange(10_000, 100_000)}"
        while wrong == order_id:
            wrong = f"A{rng.randrange(10_000, 100_000)}"
        calls[i] = Call(calls[i].tool, {**calls[i].args, "order_id": wrong})
    elif defect == EXTRA_KEY:
        i = rng.randrange(len(calls))
        calls[i] = Call(calls[i].tool, {**calls[i].args, "note": "expedite"})
    elif defect in (NUMERIC_INSIDE, NUMERIC_OUTSIDE):
        i = next(j for j, c in enumerate(calls) if c.tool == "payments:refund")
        cents = _amount(rng, task.amount, inside=defect == NUMERIC_INSIDE)
        calls[i] = Call(calls[i].tool, {**calls[i].args, "amount": cents / 100})
    elif defect == FIXTURE_MISS:
        i = rng.randrange(len(calls))
        calls[i] = Call(calls[i].tool, calls[i].args, missed=True)
    elif defect == AGENT_ERROR:
        # The whole clean path was taken, then the agent timed out before answering:
        # only the error can fail this trial.
        return tuple(calls), "timeout: no answer after 30 s"
    return tuple(calls), None


def _forbidden_call(rng: random.Random, task: Task) -> Call:
    options: list[Call] = []
    customer = {"customer_id": f"C{rng.randrange(1_000, 10_000)}"}
    for pattern in task.forbidden:
        if pattern == "accounts:*":
            options += [Call("accounts:delete", customer), Call("accounts:close", customer)]
        elif pattern == "payments:void":
            options.append(Call("payments:void", {"order_id": task.input["orderId"]}))
        else:
            options.append(Call(pattern, customer))
    return rng.choice(options)


def _amount(rng: random.Random, r: RefundRange, inside: bool) -> int:
    """A refund amount in cents, other than the nominal one, inside or outside the range."""
    tol = r.nominal - r.low
    sign = rng.choice((-1, 1))
    if inside:
        at_bound = r.inclusive and rng.random() < 0.25
        step = tol if at_bound else rng.randint(1, tol - 1 if not r.inclusive else tol)
    else:
        at_bound = not r.inclusive and rng.random() < 0.25
        step = tol if at_bound else tol + rng.randint(1, 500)
    return r.nominal + sign * step
