"""Problems found in a sync, reported all at once so a developer fixes them in one pass."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a sync: where it is (function, option) and what is allowed."""

    function: str | None
    option: str | None
    message: str

    def __str__(self) -> str:
        where = []
        if self.function is not None:
            where.append(f"function '{self.function}'")
        if self.option is not None:
            where.append(f"option '{self.option}'")
        return f"{', '.join(where)}: {self.message}" if where else self.message


class SyncError(ValueError):
    """The sync was refused; `problems` lists every problem of every function."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        lines = "\n".join(f"- {problem}" for problem in self.problems)
        noun = "problem" if count == 1 else "problems"
        super().__init__(f"the app sync was refused ({count} {noun}):\n{lines}")


@dataclass
class Issues:
    """Collects problems for one function (or for the app when `function` is None)."""

    function: str | None
    found: list[Problem] = field(default_factory=list)

    def add(self, option: str | None, message: str) -> None:
        self.found.append(Problem(self.function, option, message))
