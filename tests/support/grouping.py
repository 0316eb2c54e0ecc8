"""Keep tests that share a started server on one pytest-xdist worker.

Under `--dist loadgroup` every test is its own unit of work unless it carries an
`xdist_group` mark. A test using a module- or session-scoped fixture that starts something
(a generator fixture: it has a teardown) would otherwise land on any worker, and each worker
would start that server again. So such a test is grouped with the others using the same
fixture instance: the widest such fixture decides (a session fixture's users form one group;
a module fixture's users form one group per module and per module-scoped parameter set,
since each parameter set starts its own server anyway and may run on its own worker).
Without xdist the mark does nothing. A plugin of tests/conftest.py.
"""

import inspect

import pytest

SHARED_SCOPES = ("session", "package", "module")
# Folders by how long their tests take, longest first: under xdist the workers take tests in
# collection order (after the groups), so minute-long integration tests must not be left for
# last, when one worker would run them alone while the others sit idle.
FOLDER_ORDER = ("integration", "browser", "api", "store", "unit")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups off the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        marked = item.get_closest_marker("xdist_group")  # a test's own mark wins
        name = str(marked.args[0]) if marked and marked.args else _group(item)
        if name is None:
            continue
        if marked is None:
            item.add_marker(pytest.mark.xdist_group(name))
        if getattr(config.option, "loadgroup", False) and hasattr(item, "_id"):
            _suffix_node_id(item, name)


def _suffix_node_id(item: pytest.Item, group: str) -> None:
    """What xdist's loadgroup does to a marked test's node id ("<id>@<group>", which its
    scheduler reads): xdist 3.8 writes it to `item._nodeid`, which pytest 9.2 no longer reads
    (the id lives in `item._id`), so every test would be its own unit again."""
    try:
        from _pytest.nodeid import NodeId  # pytest >= 9.2 only, as is `_id`
    except ImportError:  # a pytest that moved it: the groups are lost, not the run
        return
    item._id = NodeId.parse(f"{item.nodeid}@{group}")  # type: ignore[attr-defined]


def _group(item: pytest.Item) -> str | None:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    shared = {}  # scope -> "where.name" of a resource fixture of that scope
    for name in item.fixturenames:  # type: ignore[attr-defined]
        defs = info.name2fixturedefs.get(name)
        if not defs:
            continue
        fixture = defs[-1]
        scope = fixture.scope
        if scope in SHARED_SCOPES and _holds_resource(fixture.func):
            where = fixture.baseid.replace("/", ".")  # no "::" or "/": part of a node id now
            shared.setdefault(scope, f"{where}.{name}")
    for scope in SHARED_SCOPES[:2]:
        if scope in shared:
            return shared[scope]
    if "module" not in shared:
        return None
    params = _module_params(item, info)
    module = str(item.module.__name__)  # type: ignore[attr-defined]
    # no brackets: xdist reads "@group" off the node id only after its last "]"
    return f"{module}({params})" if params else module


def _holds_resource(func: object) -> bool:
    return inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func)


def _module_params(item: pytest.Item, info: object) -> str:
    """The item's module-scoped parameters, e.g. `backend=sqlite,sdk=weir`."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return ""
    picked = []
    for name, value in sorted(callspec.params.items()):
        defs = info.name2fixturedefs.get(name)  # type: ignore[attr-defined]
        if defs and defs[-1].scope in SHARED_SCOPES:
            picked.append(f"{name}={value}")
    return ",".join(picked)


def slow_folders_first(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        parts = item.nodeid.split("/")
        folder = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
        return FOLDER_ORDER.index(folder) if folder in FOLDER_ORDER else len(FOLDER_ORDER)

    items.sort(key=rank)  # stable: each folder keeps its own order
