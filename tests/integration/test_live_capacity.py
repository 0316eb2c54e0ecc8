"""Live capacity raises and cuts against a real `weir dev` and a real weir.sdk app whose calls
stay in the app until the test releases them (issue 36, items 3 and 4): every slot count shown
(REST, GraphQL, the run page, the functions pages) is of the live capacity, and a concurrency
fencing token is issued only while the key's live capacity is 1."""

import html
import itertools
import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.integration.conftest import weir_and_app
from tests.integration.harness import AppServer, WeirServer, wait_until
from tests.support.backends import BACKENDS

pytestmark = pytest.mark.integration
APP = "tests.integration.apps.weir_running"
FUNCTION = "running-single"  # Concurrency(1) as its code declares
SCOPE = "concurrency0"  # the fencing token of its first (only) concurrency limit


@pytest.fixture(scope="module", params=BACKENDS)
def servers(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[WeirServer, AppServer, Path]]:
    tmp = tmp_path_factory.mktemp(f"capacity-{request.param}")
    with weir_and_app(tmp, str(request.param), APP, "running") as (weir, app):
        yield weir, app, tmp


def _capacity(weir: WeirServer) -> dict[str, Any]:
    found = httpx.get(f"{weir.url}/v1/capacity", timeout=10).json()["data"]
    [cap] = [c for c in found if c["kind"] == "concurrency" and FUNCTION in c["name"]]
    return dict(cap)


def _resize(weir: WeirServer, size: int | None) -> None:
    """Set the live capacity (None: back to the declared 1), as an operator does."""
    cap = _capacity(weir)
    action, body = ("reset", {}) if size is None else ("set", {"capacity": size})
    body |= {"revision": cap["revision"], "actor": "test"}
    answer = httpx.post(f"{weir.url}/v1/capacity/{cap['id']}/{action}", json=body, timeout=10)
    assert answer.status_code == 200, answer.text
    assert answer.json()["data"]["capacity"] == (size or 1)


def _start(weir: WeirServer, release: Path) -> str:
    event_id = weir.send("t/single", {"release": str(release)})
    return str(wait_until(lambda: weir.runs(event_id))[0]["run_id"])


def _began(app: AppServer, run_id: str) -> dict[str, Any] | None:
    found = [e for e in app.entries("begin") if e["run"] == run_id]
    return found[0] if found else None


def _ended(app: AppServer, run_id: str) -> dict[str, Any] | None:
    found = [e for e in app.entries("end") if e["run"] == run_id]
    return found[0] if found else None


def _running(weir: WeirServer, app: AppServer, size: int) -> tuple[list[str], Path]:
    """`size` runs of the function in the app at once, the first alone under the declared 1
    (so it holds a token), the others after a raise to `size`; with their release file."""
    release = weir.db.parent / f"release-{uuid.uuid4().hex[:8]}"
    first = _start(weir, release)
    wait_until(lambda: _began(app, first))
    _resize(weir, size)
    others = [_start(weir, release) for _ in range(size - 1)]
    for run_id in others:
        wait_until(lambda r=run_id: _began(app, r))  # all in the app together
    return [first, *others], release


def _shown(weir: WeirServer, run_id: str) -> dict[str, str]:
    """The slot count of a run waiting for a slot, as each reader shows it ("used/limit")."""
    rest = weir.run(run_id)
    [key] = rest["state"]["slots"]
    [waiting] = (rest["waiting"] or {}).get("slots") or [{}]  # repeats the state while it waits
    query = "query($id: String!) { run(runID: $id) { state { words slots { used limit } } } }"
    body = {"query": query, "variables": {"id": run_id}}
    gql = httpx.post(f"{weir.url}/v0/gql", json=body, timeout=10).json()["data"]["run"]["state"]
    [gql_key] = gql["slots"]
    page = html.unescape(httpx.get(f"{weir.url}/runs/{run_id}", timeout=10).text)
    functions = html.unescape(httpx.get(f"{weir.url}/functions", timeout=10).text)
    function = html.unescape(httpx.get(f"{weir.url}/functions/{FUNCTION}", timeout=10).text)
    return {
        "REST state.slots": f"{key['used']}/{key['limit']}",
        "REST state.words": _count(r"(\d+)/(\d+) slots in use", rest["state"]["words"]),
        "REST waiting.slots": f"{waiting.get('used')}/{waiting.get('limit')}",
        "GraphQL state.slots": f"{gql_key['used']}/{gql_key['limit']}",
        "GraphQL state.words": _count(r"(\d+)/(\d+) slots in use", gql["words"]),
        "run page words": _count(r"(\d+)/(\d+) slots in use", page),
        "run page table": _count(r"<td>(\d+) / (\d+)</td>", page),
        "functions page": _count(r"\(whole function\) (\d+)/(\d+)", functions),
        "function page": _count(r"\(whole function\)</td><td>(\d+) / (\d+)</td>", function),
    }


def _count(pattern: str, text: str) -> str:
    found = re.search(pattern, text)
    return f"{found[1]}/{found[2]}" if found else f"not shown: {pattern!r}"


def test_every_slot_count_shown_is_of_the_live_capacity_after_a_raise_and_a_cut(
    servers: tuple[WeirServer, AppServer, Path],
) -> None:
    """Raised from the declared 1 to 3, three runs execute and a fourth waits: every reader
    says 3/3, not 3/1; cut to 2 while the three still run, 3/2 (nobody's slot is revoked)."""
    weir, app, _ = servers
    runs, release = _running(weir, app, 3)
    try:
        waiting = _start(weir, release)
        wait_until(lambda: weir.run(waiting)["state"]["kind"] == "concurrency")
        shown = wait_until(lambda: _shown(weir, waiting))
        assert shown == dict.fromkeys(shown, "3/3")
        _resize(weir, 2)
        assert _shown(weir, waiting) == dict.fromkeys(shown, "3/2")
        _resize(weir, None)
        assert _shown(weir, waiting) == dict.fromkeys(shown, "3/1")
        assert _began(app, waiting) is None
    finally:
        release.touch()
    for run_id in (*runs, waiting):
        wait_until(lambda r=run_id: weir.run(r)["status"] == "Completed", timeout=60)


def test_a_concurrency_token_is_issued_only_while_the_live_capacity_is_1(
    servers: tuple[WeirServer, AppServer, Path],
) -> None:
    """Raised live from 1 to 3, the calls that then run beside the holder get no `concurrency0`
    token: a downstream keeping the highest token it has seen (docs/semantics.md#fencing-tokens)
    would otherwise refuse the holder's writes as soon as a later call wrote. Cut back to 1
    while the three run, they keep running (tokens are not revoked, none is handed out); the
    next holder starts only when they have all ended, with a token above every earlier one."""
    weir, app, _ = servers
    (first, *beside), release = _running(weir, app, 3)
    holder = _began(app, first)
    assert holder is not None and isinstance(holder["fences"].get(SCOPE), int)
    assert [(_began(app, r) or {}).get("fences") for r in beside] == [{}, {}]
    _resize(weir, None)  # cut to 1 while three calls run
    after_cut = weir.db.parent / f"release-{uuid.uuid4().hex[:8]}"
    after_cut.touch()
    nxt = _start(weir, after_cut)
    wait_until(lambda: weir.run(nxt)["state"]["kind"] == "concurrency")
    assert _began(app, nxt) is None  # three in use, of 1: it waits
    release.touch()
    wait_until(lambda: weir.run(nxt)["status"] == "Completed", timeout=60)
    for run_id in (first, *beside):
        assert weir.run(run_id)["status"] == "Completed"  # the cut revoked nobody's slot

    began, ends = _began(app, nxt), [_ended(app, r) for r in (first, *beside)]
    assert began is not None and all(e is not None and e["at"] <= began["at"] for e in ends)
    assert began["fences"][SCOPE] > holder["fences"][SCOPE]
    # What a downstream relies on, over every call this Weir ran under the limit: a token is
    # only handed out above every earlier one, and no call holding a token is still running
    # when a call with a higher one begins (its writes would be refused).
    ended_at = {e["run"]: e["at"] for e in app.entries("end")}
    tokened = sorted(
        (e["at"], e["fences"][SCOPE], ended_at[e["run"]])
        for e in app.entries("begin")
        if SCOPE in e["fences"]
    )
    tokens = [token for _, token, _ in tokened]
    assert tokens == sorted(set(tokens)), tokened
    for (_, _, end), (start, _, _) in itertools.pairwise(tokened):
        assert end <= start, tokened
