"""`record` (weir.platform.foundation.record_type): plain to build, frozen to mypy, compared like
a frozen dataclass."""

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from weir.platform.foundation import record_type as records
from weir.platform.foundation.record_type import record


@record
class Point:
    x: int
    tags: tuple[str, ...] = ()


@record(slots=True)
class Slim:
    x: int


@record(eq=False)
class Handle:
    name: str


def test_records_compare_and_hash_by_their_fields() -> None:
    assert Point(1, ("a",)) == Point(1, ("a",)) and Point(1) != Point(2)
    assert hash(Point(1, ("a",))) == hash(Point(1, ("a",)))
    assert len({Slim(1), Slim(1), Slim(2)}) == 2


def test_a_record_changes_only_into_a_new_one() -> None:
    first = Point(1)
    moved = dataclasses.replace(first, x=5)
    assert (first.x, moved.x, moved.tags) == (1, 5, ())


def test_slots_and_identity_are_kept_as_asked() -> None:
    assert Slim.__slots__ == ("x",) and not hasattr(Slim(1), "__dict__")
    one = Handle("a")
    assert one != Handle("a") and one == one and hash(one) == object.__hash__(one)


def test_a_class_of_its_own_hash_keeps_it() -> None:
    @record
    class Keyed:
        key: str
        note: str = ""

        def __hash__(self) -> int:
            return hash(self.key)

    assert hash(Keyed("a", "x")) == hash("a") and Keyed("a") != Keyed("a", "y")


def test_records_are_built_plain_not_frozen() -> None:
    # the point of `record`: no object.__setattr__ per field (docs/architecture.md)
    for cls in (Point, Slim, Handle):
        assert not cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    point = Point(1)
    point.__setattr__("x", 2)  # only mypy forbids it
    assert point.x == 2


def test_mypy_refuses_assigning_a_field(tmp_path: Path) -> None:
    # mypy does not follow the editable install: it reads the module from a view of its own
    # (as .ci/typecheck does for the whole tree)
    package = tmp_path / "view" / "weir" / "platform"
    (package / "foundation").mkdir(parents=True)
    (package.parent / "__init__.py").write_text("")
    (package / "foundation/record_type.py").symlink_to(records.__file__ or "")
    source = tmp_path / "mutate.py"
    source.write_text(
        textwrap.dedent(
            """
            from weir.platform.foundation.record_type import record

            @record(slots=True)
            class Slim:
                x: int

            Slim(1).x = 2
            """
        )
    )
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--namespace-packages", str(source)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(tmp_path / "view")},
    )
    assert checked.returncode == 1, checked.stdout
    assert 'Property "x" defined in "Slim" is read-only' in checked.stdout
