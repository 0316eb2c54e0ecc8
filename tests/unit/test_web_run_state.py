"""How the run page shows a run state (web/run_detail.state_dict): every set field as a named
fact, and a gate this Weir does not know yet (a new `waiting` kind) readable as it came."""

from weir.platform.foundation.vocabulary import RunStateKind
from weir.platform.reads.run_state import KeyUse, RunState
from weir.web.run_detail import state_dict

T0 = 1_700_000_000_000


def test_a_gate_unknown_to_the_page_shows_its_words_time_key_and_own_fields() -> None:
    state = RunState(
        RunStateKind.GATE,
        "lane: 3 runs of key 'cust-7' ahead",
        gate="lane",
        until=T0 + 90_000,
        key="cust-7",
        details={"ahead": 3, "window_ms": 1000, "holders": ["r1", "r2"]},
    )
    shown = state_dict(state, T0)
    assert (shown["kind"], shown["gate"], shown["words"]) == ("gate", "lane", state.words)
    assert shown["title"] == "Why is this run waiting?"
    assert shown["facts"] == [
        ("Until", "2023-11-14 22:14:50.000 UTC (in 1 min 30 s)"),
        ("Key", "cust-7"),
        ("Ahead", "3"),
        ("Window ms", "1000"),
        ("Holders", '["r1", "r2"]'),
    ]


def test_an_executing_step_and_a_full_key_list_what_they_hold() -> None:
    executing = RunState(
        RunStateKind.EXECUTING,
        "executing step charge, attempt 2 of 4",
        since=T0 - 2_500,
        step_id="h1",
        step_name="charge",
        attempt=2,
        max_attempts=4,
    )
    shown = state_dict(executing, T0)
    assert shown["title"] == "What is this run doing?"
    assert shown["facts"] == [
        ("Step", "charge"),
        ("Attempt", "2 of 4"),
        ("Since", "2023-11-14 22:13:17.500 UTC (2.5 s ago)"),
    ]
    blocked = RunState(
        RunStateKind.CONCURRENCY,
        "concurrency: ...",
        key="",
        slots=(KeyUse("", 2, 2, ("r1", "r1")),),
        also=(executing,),
    )
    shown = state_dict(blocked, T0)
    assert shown["slots"] == [{"key": "(function-wide)", "used": 2, "limit": 2, "holders": ["r1"]}]
    assert [a["words"] for a in shown["also"]] == [executing.words]
