"""Live progress of a run: trials done of all, and how many passed and failed."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..runner.trial import GradedTrial


class RunProgress:
    """The live bar (on a terminal), and one line naming the run as soon as it exists, so a
    job killed mid-run — in CI there is no bar — can still be resumed."""

    def __init__(self, console: Console, enabled: bool = True) -> None:
        self.console = console
        self.run_id: str | None = None
        self.passed = self.failed = 0
        self._progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(
                "[green]{task.fields[passed]} passed[/green] "
                "[red]{task.fields[failed]} failed[/red]"
            ),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not enabled,
        )
        self._task = self._progress.add_task("trials", total=None, passed=0, failed=0)

    def __enter__(self) -> RunProgress:
        self._progress.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.stop()

    def started(self, run_id: str, total: int, done: int) -> None:
        self.run_id = run_id
        resumed = f", {done} already done" if done else ""
        self.console.print(
            f"run {escape(run_id)}: {total - done} trials to run{resumed}"
            f" (if interrupted: openwop-eval run --resume {escape(run_id)})",
            highlight=False,
        )
        self._progress.update(
            self._task, total=total, completed=done, description=f"trials of {run_id}"
        )

    def finished(self, outcome: GradedTrial) -> None:
        if outcome.grade.passed:
            self.passed += 1
        else:
            self.failed += 1
        self._progress.update(self._task, advance=1, passed=self.passed, failed=self.failed)
