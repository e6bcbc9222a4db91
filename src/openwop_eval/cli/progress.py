"""Live progress of a run: trials done of all, and how many passed and failed."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from ..runner.trial import TrialOutcome


class RunProgress:
    def __init__(self, console: Console, enabled: bool = True) -> None:
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
        self._progress.update(
            self._task, total=total, completed=done, description=f"trials of {run_id}"
        )

    def finished(self, outcome: TrialOutcome) -> None:
        if outcome.grade.passed:
            self.passed += 1
        else:
            self.failed += 1
        self._progress.update(self._task, advance=1, passed=self.passed, failed=self.failed)
