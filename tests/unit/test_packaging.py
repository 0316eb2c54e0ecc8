"""The wheel's contents are declared by hand in pyproject.toml (the checkout's folders map onto
weir.*): these tests fail when a new folder of code or a new data file would be left out."""

import tomllib
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTS = ("platform", "sdk", "expressions", "web")


def _setuptools() -> dict[str, object]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    table: dict[str, object] = config["tool"]["setuptools"]
    return table


def _source_files() -> list[Path]:
    files = [f for part in PARTS for f in (ROOT / part).rglob("*") if f.is_file()]
    return [f for f in files if "__pycache__" not in f.parts and "_entry" not in f.parts]


def _package_of(folder: Path) -> str:
    return ".".join(("weir", *folder.relative_to(ROOT).parts))


def test_every_folder_of_code_is_a_listed_package() -> None:
    folders = {_package_of(f.parent) for f in _source_files() if f.suffix == ".py"}
    listed = set(_setuptools()["packages"])  # type: ignore[call-overload]
    assert folders == listed - {"weir"}


def test_every_data_file_is_declared_package_data() -> None:
    data: dict[str, list[str]] = _setuptools()["package-data"]  # type: ignore[assignment]
    missing = []
    for file in _source_files():
        if file.suffix in (".py", ".pyc"):
            continue
        declared = _declared(file, data)
        if not declared:
            missing.append(str(file.relative_to(ROOT)))
    assert missing == []


def _declared(file: Path, data: dict[str, list[str]]) -> bool:
    for package, patterns in data.items():
        if package == "weir":
            continue  # platform/_entry: not a folder of the tree being walked
        folder = ROOT.joinpath(*package.split(".")[1:])
        if folder in file.parents:
            inner = file.relative_to(folder).as_posix()
            if any(fnmatch(inner, p) and inner.count("/") == p.count("/") for p in patterns):
                return True
    return False


def test_the_entry_package_is_typed() -> None:
    assert (ROOT / "platform" / "_entry" / "py.typed").is_file()
