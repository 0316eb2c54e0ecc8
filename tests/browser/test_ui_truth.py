"""The run and event pages tell the truth (issue 15, items 1-5), in headless Chromium against a
real Weir server and a real SDK app: one run state everywhere, every effect of an event, the
run page's fixed rows, every attempt's error with its stack, JSON viewers, links both ways."""

import json
import time
import urllib.request
import uuid
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.browser.browser_support import Server, screenshot, until

pytestmark = pytest.mark.browser


def _tag() -> str:
    return uuid.uuid4().hex[:8]


def _run(server: Server, run_id: str) -> dict[str, Any]:
    data: dict[str, Any] = server.get(f"/v1/runs/{run_id}")["data"]
    return data


def _gql_state(server: Server, run_id: str) -> dict[str, Any]:
    query = (
        "query($id: String!) { run(runID: $id) { state { kind words gate since until step_id "
        "step_name attempt max_attempts key slots { key used limit holders } event expression "
        "function child_run_id error details also { kind words gate since until step_id "
        "step_name attempt max_attempts key slots { key used limit holders } event expression "
        "function child_run_id error details } } } }"
    )
    body = json.dumps({"query": query, "variables": {"id": run_id}}).encode()
    request = urllib.request.Request(
        server.url + "/v0/gql", body, {"content-type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=5) as answer:
        state: dict[str, Any] = json.loads(answer.read())["data"]["run"]["state"]
    for other in state["also"]:
        other["also"] = []  # the query asks one level deep; REST nests the same way
    return state


def _state_kind(server: Server, run_id: str, kind: str) -> dict[str, Any] | None:
    data = _run(server, run_id)
    return data if data["state"]["kind"] == kind else None


# -- 1. one run state, the same on the page, in the list, in REST and in GraphQL -------------
def test_a_run_blocked_by_concurrency_names_key_slots_and_holder_everywhere(
    page: Page, server: Server
) -> None:
    team = f"team-{_tag()}"
    # it holds the slot for the whole test, however slow the machine (the sleep is async)
    holder = server.run_of(server.send("ui/hold", {"team": team, "secs": 60}))
    until(lambda: _state_kind(server, holder, "executing"), "the first run to execute")
    blocked = server.run_of(server.send("ui/hold", {"team": team, "secs": 0}))
    state = until(lambda: _state_kind(server, blocked, "concurrency"), "the block")["state"]
    assert state["slots"] == [{"key": team, "used": 1, "limit": 1, "holders": [holder]}]
    rest = _run(server, blocked)
    assert rest["waiting"] == rest["state"]  # while it waits, `waiting` is the state itself
    assert _gql_state(server, blocked) == rest["state"]  # GraphQL answers the same

    page.goto(f"{server.url}/runs/{blocked}")
    box = page.locator("#run-state")
    expect(box).to_contain_text("Why is this run waiting?")
    expect(box).to_contain_text(rest["state"]["words"])
    expect(box.locator(".slots")).to_contain_text(team)
    expect(box.locator(".slots")).to_contain_text("1 / 1")
    expect(box.locator(f".slots a[href='/runs/{holder}']")).to_be_visible()
    screenshot(page, "run-concurrency")

    page.goto(f"{server.url}/runs/{holder}")
    expect(page.locator("#run-state")).to_contain_text("What is this run doing?")
    expect(page.locator("#run-state")).to_contain_text("executing")
    expect(page.locator("#run-state")).to_contain_text("Attempt")
    assert _run(server, holder)["waiting"] is None  # executing is not waiting

    page.goto(server.url + "/runs?function=ui-test-hold")
    row = page.locator(f"tr[data-id='{blocked}']")
    expect(row.locator(".why")).to_have_text(rest["state"]["words"])


def test_sleeping_and_waiting_runs_say_so_in_rest_graphql_and_the_page(
    page: Page, server: Server
) -> None:
    n = _tag()
    napper = server.run_of(server.send("ui/nap", {"n": n}))
    waiter = server.run_of(server.send("ui/wait", {"n": n}))
    sleeping = until(lambda: _state_kind(server, napper, "sleeping"), "the sleep")
    waiting = until(lambda: _state_kind(server, waiter, "waiting_for_event"), "the wait")
    assert sleeping["waiting"]["step_name"] == "long-nap"
    assert sleeping["waiting"]["until"].endswith("+00:00")  # a clock time, not epoch ms
    assert waiting["waiting"]["event"] == "ui/approve"
    assert waiting["waiting"]["expression"] == "async.data.n == event.data.n"
    for run_id, rest in ((napper, sleeping), (waiter, waiting)):
        assert _gql_state(server, run_id) == rest["state"]
    page.goto(f"{server.url}/runs/{waiter}")
    box = page.locator("#run-state")
    expect(box).to_contain_text("waiting for event ui/approve where async.data.n == event.data.n")
    expect(box.locator(".state-facts")).to_contain_text("Until")
    server.send("ui/approve", {"n": n})  # let it finish
    page.goto(f"{server.url}/runs/{napper}")
    page.once("dialog", lambda dialog: dialog.accept())  # "Cancel run …?"
    page.get_by_role("button", name="Cancel run").click()
    expect(page.locator("#run h1")).to_contain_text("Cancelled")


# -- 2. every effect of an event ---------------------------------------------------------------
def _effects(page: Page, server: Server, event_id: str) -> Any:
    page.goto(f"{server.url}/events/{event_id}")
    return page.locator("#effects")


def test_the_event_page_shows_every_effect_of_an_event(page: Page, server: Server) -> None:
    n = _tag()
    waiter = server.run_of(server.send("ui/wait", {"n": n}))
    until(lambda: _state_kind(server, waiter, "waiting_for_event"), "the wait")
    approve = server.send("ui/approve", {"n": n})
    effects = _effects(page, server, approve)
    expect(effects).to_contain_text("Resumed a waiting run")
    expect(effects.locator(f"a[href='/runs/{waiter}']")).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("No function is triggered")

    stoppable = server.run_of(server.send("ui/stoppable", {"n": n}))
    until(lambda: _state_kind(server, stoppable, "sleeping"), "the sleep")
    stop = server.send("ui/stop", {"n": n})
    until(lambda: _run(server, stoppable)["status"] == "Cancelled", "the cancel")
    effects = _effects(page, server, stop)
    expect(effects).to_contain_text("Cancelled a run")
    expect(effects.locator(f"a[href='/runs/{stoppable}']")).to_be_visible()

    first, second = server.send("ui/batch", {"i": 1}), server.send("ui/batch", {"i": 2})
    batch_run = server.run_of(second)
    for event_id in (first, second):
        effects = _effects(page, server, event_id)
        expect(effects.locator("[data-kind='batched_into']")).to_contain_text("Batched into run")
        expect(effects.locator(f"a[href='/runs/{batch_run}']")).to_be_visible()
        expect(page.locator("main")).not_to_contain_text("skipped")

    k = _tag()
    # one request: two separate ones might arrive more than the 1 s window apart under load
    early, late = server.send_all([("ui/debounce", {"k": k}), ("ui/debounce", {"k": k})])
    effects = _effects(page, server, early)
    expect(effects).to_contain_text("Superseded (debounce)")
    expect(effects).to_contain_text(f"superseded in the debounce window by event {late}")
    debounced_run = server.run_of(late)
    effects = _effects(page, server, late)
    expect(effects.locator("[data-kind='started']")).to_contain_text("Started run")
    expect(effects.locator(f"a[href='/runs/{debounced_run}']")).to_be_visible()
    screenshot(page, "event-effects")

    server.send("ui/limited", {"n": n})  # one an hour: this one or an earlier test's ran
    skipped = server.send("ui/limited", {"n": n + "b"})
    effects = _effects(page, server, skipped)
    expect(effects).to_contain_text("Skipped by the rate limit")
    expect(effects).to_contain_text("Rate limited")  # the function it skipped

    nobody = server.send("ui/nobody-listens", {})
    page.goto(f"{server.url}/events/{nobody}")
    expect(page.locator("main")).to_contain_text("no function's trigger names this event")


# -- 3. the run page's rows tell the truth ---------------------------------------------------
def test_a_cancelled_sleep_stops_growing_and_says_cancelled(page: Page, server: Server) -> None:
    run_id = server.run_of(server.send("ui/nap", {"n": _tag()}))
    until(lambda: _state_kind(server, run_id, "sleeping"), "the sleep")
    page.goto(f"{server.url}/runs/{run_id}")
    page.once("dialog", lambda dialog: dialog.accept())  # "Cancel run …?"
    page.get_by_role("button", name="Cancel run").click()
    expect(page.locator("#run h1")).to_contain_text("Cancelled")
    row = page.locator("#waterfall li", has_text="Sleep · long-nap")
    expect(row).to_contain_text("Cancelled")
    expect(row).not_to_contain_text("so far")
    took = row.locator(".bar-meta").inner_text()
    time.sleep(1.2)
    page.reload()
    assert row.locator(".bar-meta").inner_text() == took  # it no longer grows
    history = _run(server, run_id)["history"]
    sleep = next(h for h in history if h["kind"] == "sleep")
    assert sleep["status"] == "CANCELLED" and sleep["ended_at"] is not None


def test_a_timed_out_wait_and_an_invoke_show_names_and_the_same_status(
    page: Page, server: Server
) -> None:
    waiter = server.run_of(server.send("ui/wait", {"n": _tag(), "timeout": "1s"}))
    until(lambda: _run(server, waiter)["status"] == "Completed", "the timed-out run")
    page.goto(f"{server.url}/runs/{waiter}")
    step = page.locator(".steps li.step", has_text="approval")
    expect(step.locator("summary .badge")).to_have_text("Timed out")
    expect(page.locator("#waterfall li", has_text="Wait for event ui/approve")).to_contain_text(
        "Timed out"
    )
    assert [s["status"] for s in _run(server, waiter)["steps"]] == ["TIMED_OUT"]

    parent = server.run_of(server.send("ui/parent", {}))
    until(lambda: _run(server, parent)["status"] == "Completed", "the parent")
    page.goto(f"{server.url}/runs/{parent}")
    expect(page.locator(".steps .step-name")).to_have_text(["ask-child"])
    expect(page.locator("#run-output")).to_contain_text("42")


def test_attempts_are_numbered_per_step_and_never_restart(page: Page, server: Server) -> None:
    run_id = server.run_of(server.send("ui/flaky", {}))
    until(lambda: _run(server, run_id)["status"] == "Completed", "the flaky run")
    page.goto(f"{server.url}/runs/{run_id}")
    labels = page.locator("#waterfall .bar-name").all_inner_texts()
    charge = [label for label in labels if "charge" in label]
    assert charge == [f"Call · charge · attempt {i}" for i in (1, 2, 3)], labels
    assert not any("attempt 1" in label for label in labels[labels.index(charge[-1]) + 1 :])
    backoffs = [label for label in labels if label.startswith("Retry backoff")]
    assert backoffs == ["Retry backoff before attempt 2", "Retry backoff before attempt 3"]


def test_a_failed_run_shows_each_stack_once_backoffs_as_waits_and_attempts_in_order(
    page: Page, server: Server
) -> None:
    # issue 36 item 7: three attempts fail alike, then the function raises the step's error
    run_id = server.run_of(server.send("ui/give-up", {}))
    until(lambda: _run(server, run_id)["status"] == "Failed", "the run that gives up")
    page.goto(f"{server.url}/runs/{run_id}")
    labels = page.locator("#waterfall .bar-name").all_inner_texts()
    calls = [label for label in labels if label.startswith("Call") and " attempt " in label]
    numbers = [int(label.rsplit(" ", 1)[1]) for label in calls]
    assert numbers == sorted(numbers) and numbers[-1] == 3, labels  # never back to 1
    backoffs = page.locator("#waterfall li.k-backoff")
    expect(backoffs).to_have_count(2)
    for row in backoffs.all():
        expect(row.locator(".badge")).to_have_text("Waited")
    errors = page.locator(".error-box", has_text="RuntimeError: the ledger is closed")
    assert errors.count() >= 5  # each attempt, the step, the function's call, the run
    expect(page.locator("pre.stack", has_text="the ledger is closed")).to_have_count(1)
    first = page.locator("pre.stack").first.get_attribute("id")
    refs = page.locator(".stack-ref a")
    expect(refs).to_have_count(errors.count() - 1)
    assert {refs.nth(i).get_attribute("href") for i in range(refs.count())} == {f"#{first}"}
    screenshot(page, "run-failed")


# -- 4. errors with stacks, every attempt kept; JSON viewers with copy -------------------------
def test_every_attempt_keeps_its_error_and_stack_with_a_copy_button(
    page: Page, server: Server
) -> None:
    run_id = server.run_of(server.send("ui/flaky", {}))
    until(lambda: _run(server, run_id)["status"] == "Completed", "the flaky run")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{server.url}/runs/{run_id}")
    step = page.locator(".steps li.step", has_text="charge")
    step.locator("summary").click()
    attempts = step.locator("li.attempt")
    expect(attempts).to_have_count(3)
    for number in (1, 2):
        box = attempts.nth(number - 1).locator(".error-box")
        expect(box).to_contain_text(f"ValueError: card declined on attempt {number}")
        stack = box.locator("pre.stack").inner_text()
        assert "Traceback (most recent call last)" in stack and stack.count("\n") > 2
    expect(attempts.nth(2).locator(".error-box")).to_have_count(0)  # the third one worked
    attempts.nth(0).get_by_role("button", name="Copy error ValueError").click()
    expect(attempts.nth(0).locator(".copied")).to_have_text("Copied")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("ValueError: card declined on attempt 1\nTraceback")
    screenshot(page, "run-attempts")


def test_json_viewers_fold_highlight_and_copy(page: Page, server: Server) -> None:
    who = _tag()
    run_id = server.run_of(server.send("ui/greet", {"who": who}))
    until(lambda: _run(server, run_id)["status"] == "Completed", "the greet run")
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    page.goto(f"{server.url}/runs/{run_id}")
    output = page.locator("#run-output")
    tree = output.locator("pre.j-tree")
    expect(tree.locator(".j-key")).to_have_text(['"greeting"'])
    expect(tree.locator(".j-str")).to_have_text([f'"hello {who}"'])
    top = tree.locator("details.j-box").first
    expect(top).to_have_attribute("open", "")
    top.locator("summary").click()
    expect(tree.locator(".j-str")).not_to_be_visible()  # folded
    output.get_by_role("button", name="Copy Run output").click()
    assert json.loads(page.evaluate("navigator.clipboard.readText()")) == {
        "greeting": f"hello {who}"
    }
    event_id = _run(server, run_id)["event_id"]
    page.goto(f"{server.url}/events/{event_id}")
    payload = page.locator("#event-payload pre.j-tree")
    expect(payload.locator(".j-key", has_text='"who"')).to_be_visible()
    page.get_by_role("button", name="Copy event payload").click()
    assert json.loads(page.evaluate("navigator.clipboard.readText()"))["data"] == {"who": who}


# -- 5. links both ways ------------------------------------------------------------------------
def test_links_run_both_ways(page: Page, server: Server) -> None:
    parent = server.run_of(server.send("ui/parent", {}))
    until(lambda: _run(server, parent)["status"] == "Completed", "the parent")
    page.goto(f"{server.url}/runs/{parent}")
    child_link = page.locator("#run-facts a.link-child")
    expect(child_link).to_have_count(1)
    child = child_link.inner_text()
    assert _run(server, parent)["links"]["children"] == {
        _run(server, parent)["steps"][0]["id"]: child
    }
    child_link.click()
    expect(page.locator("#run h1")).to_contain_text("Child")
    expect(page.locator("#link-parent")).to_have_text(parent)
    assert _run(server, child)["links"]["parent_run_id"] == parent
    # the child's finished event is what resumed the parent: its page says so, and links it
    finished = server.get("/ui/api/events?name=inngest/function.finished&limit=200")["events"]
    [event] = [e for e in finished if f'"run_id": "{child}"' in e["payload"]]
    effects = _effects(page, server, event["id"])
    expect(effects.locator("[data-kind='resumed']")).to_contain_text("Resumed a waiting run")
    expect(effects.locator(f"a[href='/runs/{parent}']")).to_be_visible()

    page.goto(f"{server.url}/runs/{parent}")
    page.get_by_role("button", name="Rerun", exact=True).click()
    expect(page.get_by_role("status").first).to_contain_text(f"rerun of {parent}")
    expect(page.locator("#link-original")).to_have_text(parent)
    rerun = page.locator("#run").get_attribute("data-run")
    page.goto(f"{server.url}/runs/{parent}")
    expect(page.locator("#run-facts a.link-rerun")).to_have_text([rerun or ""])

    facts = page.locator("#run-facts")
    expect(facts.locator("a[href='/functions#fn-ui-test-parent']")).to_have_text("Parent")
    expect(facts.locator("a[href='/apps#app-ui-test']")).to_have_text("ui-test")
    trigger = facts.locator("a[href^='/events/']")
    expect(trigger).to_have_text("ui/parent")
    trigger.click()
    expect(page.locator("#effects").locator(f"a[href='/runs/{parent}']")).to_be_visible()
