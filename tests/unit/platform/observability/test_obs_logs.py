"""Structured logs: ids bound to a block reach every line logged in it, in JSON or text."""

import asyncio
import io
import json
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
from weir.platform.observability import logs

Captured = tuple[logging.Logger, io.StringIO, logging.Handler]


@pytest.fixture
def captured() -> Iterator[Captured]:
    out = io.StringIO()
    logger = logging.getLogger("weir.test.logs")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    handler = logs.handler(json_lines=True, stream=out)
    logger.addHandler(handler)
    yield logger, out, handler
    logger.removeHandler(handler)


def lines(out: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_a_json_line_carries_the_bound_ids_and_the_fields(captured: Captured) -> None:
    logger, out, _ = captured
    with logs.bind(run_id="R1", function_id="F1", event_id="E1"), logs.bind(step_id="S1"):
        logger.info("step completed", extra={"fields": {"op": "StepRun"}})
    [line] = lines(out)
    assert line["msg"] == "step completed"
    assert line["level"] == "info"
    assert line["logger"] == "weir.test.logs"
    assert (line["run_id"], line["function_id"], line["event_id"], line["step_id"]) == (
        "R1",
        "F1",
        "E1",
        "S1",
    )
    assert line["op"] == "StepRun"


def test_ids_end_with_their_block_and_none_leaves_an_id_out(captured: Captured) -> None:
    logger, out, _ = captured
    with logs.bind(run_id="R1", step_id=None):
        logger.info("inside")
    logger.info("outside")
    inside, outside = lines(out)
    assert inside["run_id"] == "R1" and "step_id" not in inside
    assert "run_id" not in outside


def test_explicit_ids_win_over_bound_ones(captured: Captured) -> None:
    logger, out, _ = captured
    with logs.bind(run_id="outer"):
        logger.info("about another run", extra={"ids": {"run_id": "other"}})
    assert lines(out)[0]["run_id"] == "other"


def test_tasks_started_inside_a_block_keep_its_ids(captured: Captured) -> None:
    logger, out, _ = captured

    async def work() -> None:
        await asyncio.sleep(0)
        logger.info("in a task")

    async def main() -> None:
        with logs.bind(run_id="R9"):
            task = asyncio.create_task(work())
        await task  # the block has ended; the task kept the context it started with

    asyncio.run(main())
    assert lines(out)[0]["run_id"] == "R9"


def test_an_exception_is_one_json_line(captured: Captured) -> None:
    logger, out, _ = captured
    try:
        raise ValueError("boom")
    except ValueError:
        logger.exception("failed")
    [line] = lines(out)
    assert "ValueError: boom" in str(line["exc"])


def test_text_lines_end_with_the_ids_as_pairs() -> None:
    out = io.StringIO()
    logger = logging.getLogger("weir.test.text")
    logger.propagate = False
    handler = logs.handler(json_lines=False, stream=out)
    logger.addHandler(handler)
    try:
        with logs.bind(run_id="R1"):
            logger.warning("run failed", extra={"fields": {"status": "FAILED"}})
    finally:
        logger.removeHandler(handler)
    text = out.getvalue().strip()
    assert text.endswith("WARNING weir.test.text run failed run_id=R1 status=FAILED")


FORGED = "x\n12:00:01 INFO weir.run run finished run_id=R2 status=COMPLETED"


def _text_lines(log: Callable[[logging.Logger], None]) -> list[str]:
    out = io.StringIO()
    logger = logging.getLogger("weir.test.forge")
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    handler = logs.handler(json_lines=False, stream=out)
    logger.addHandler(handler)
    try:
        log(logger)
    finally:
        logger.removeHandler(handler)
    return out.getvalue().splitlines()


@pytest.mark.parametrize("bad", [FORGED, "a\rb", "a\x00b", "a\x1b[2Kb", "a\x85b", "a\u2028b"])
def test_no_value_can_start_a_text_line_of_its_own(bad: str) -> None:
    def log(logger: logging.Logger) -> None:
        with logs.bind(event_id=bad):
            logger.warning("event %s", bad, extra={"fields": {"name": bad}})

    [line] = _text_lines(log)
    assert not any(c in line for c in "\x00\x1b\x85\u2028\r")
    assert " WARNING weir.test.forge event " in line
    if bad == FORGED:  # the forged text is still there, escaped, in the one line
        assert line.count("12:00:01 INFO") == 3


def test_a_field_value_cannot_pass_for_another_field() -> None:
    def log(logger: logging.Logger) -> None:
        logger.info("x", extra={"fields": {"name": 'a status=OK "q" \\', "n": 5, "e": ""}})

    [line] = _text_lines(log)
    assert line.endswith(' name="a status=OK \\"q\\" \\\\" n=5 e=""')


def test_an_exception_message_cannot_forge_a_line() -> None:
    def log(logger: logging.Logger) -> None:
        try:
            raise ValueError(FORGED)
        except ValueError:
            logger.exception("failed")

    first, *rest = _text_lines(log)
    assert first.endswith("ERROR weir.test.forge failed")
    assert rest and all(line.startswith("    ") for line in rest)
    assert any("12:00:01 INFO weir.run" in line for line in rest)


def test_a_text_line_starts_with_its_own_time_of_day() -> None:
    """The time is made once per second: records of another second get their own."""
    formatter = logs.TextFormatter()
    lines = []
    for created in (1_767_268_800.2, 1_767_268_800.9, 1_767_268_861.5, 1_767_268_800.1):
        record = logging.makeLogRecord({"name": "weir.t", "levelname": "INFO", "msg": "m"})
        record.created = created
        lines.append(formatter.format(record))
    seconds = (1_767_268_800, 1_767_268_800, 1_767_268_861, 1_767_268_800)
    for line, created in zip(lines, seconds, strict=True):
        assert line == f"{time.strftime('%H:%M:%S', time.localtime(created))} INFO weir.t m"


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def only_weir_handler(json_lines: bool) -> Iterator[tuple[io.StringIO, logs.LineHandler]]:
    """The root logger as `logs.configure` leaves it: Weir's handler alone."""
    root = logging.getLogger()
    kept, level = list(root.handlers), root.level
    out = io.StringIO()
    ours = logs.handler(json_lines=json_lines, stream=out)
    root.handlers[:] = [ours]
    root.setLevel(logging.INFO)
    try:
        yield out, ours
    finally:
        root.handlers[:] = kept
        root.setLevel(level)


def _tail(text_line: str) -> str:
    return text_line.split(" ", 1)[1]  # past the time of day


@pytest.mark.parametrize("json_lines", [False, True])
def test_a_line_written_straight_is_the_line_a_record_makes(json_lines: bool) -> None:
    logger = logging.getLogger("weir.test.straight")
    ids, fields = {"run_id": "R1"}, {"status": "COMPLETED", "note": "two words"}
    with only_weir_handler(json_lines) as (out, _), logs.bind(event_id="E1"):
        logs.line(logger, logging.INFO, "run completed", ids, fields)
        straight = out.getvalue()
        spy = _Kept()
        logger.addHandler(spy)  # another handler: the line goes through a record
        try:
            logs.line(logger, logging.INFO, "run completed", ids, fields)
        finally:
            logger.removeHandler(spy)
    first, second = out.getvalue().splitlines()
    assert straight == first + "\n"
    assert [r.getMessage() for r in spy.records] == ["run completed"]
    if json_lines:
        a, b = json.loads(first), json.loads(second)
        assert a.pop("ts") and b.pop("ts")
        assert (
            a
            == b
            == {
                "level": "info",
                "logger": "weir.test.straight",
                "msg": "run completed",
                "event_id": "E1",
                "run_id": "R1",
                "status": "COMPLETED",
                "note": "two words",
            }
        )
    else:
        assert _tail(first) == _tail(second)
        assert _tail(first) == (
            "INFO weir.test.straight run completed event_id=E1 run_id=R1 status=COMPLETED "
            'note="two words"'
        )


def test_a_filter_or_a_level_still_holds_for_lines_written_straight() -> None:
    logger = logging.getLogger("weir.test.filtered")
    with only_weir_handler(False) as (out, ours):
        logger.addFilter(lambda record: record.getMessage() != "hidden")
        try:
            logs.line(logger, logging.INFO, "hidden", {}, {})
            logs.line(logger, logging.INFO, "shown", {}, {})
        finally:
            logger.filters.clear()
        ours.setLevel(logging.WARNING)
        logs.line(logger, logging.INFO, "below the handler's level", {}, {})
        logs.line(logger, logging.DEBUG, "below the root's level", {}, {})
    assert [_tail(x) for x in out.getvalue().splitlines()] == ["INFO weir.test.filtered shown"]


def test_a_formatter_set_later_is_the_one_that_writes(capsys: pytest.CaptureFixture[str]) -> None:
    logger = logging.getLogger("weir.test.reformatted")
    with only_weir_handler(False) as (out, ours):
        ours.setFormatter(logging.Formatter("%(levelname)s|%(message)s"))
        logs.line(logger, logging.INFO, "run completed", {"run_id": "R1"}, {})
    assert out.getvalue() == "INFO|run completed\n"


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text")


def test_a_line_that_cannot_be_formatted_is_reported_not_raised(
    capsys: pytest.CaptureFixture[str],
) -> None:
    logger = logging.getLogger("weir.test.unprintable")
    with only_weir_handler(False) as (out, _):
        logs.line(logger, logging.INFO, "run completed", {}, {"output": Unprintable()})
        logs.line(logger, logging.INFO, "run completed", {}, {"status": "COMPLETED"})
    assert [_tail(x) for x in out.getvalue().splitlines()] == [
        "INFO weir.test.unprintable run completed status=COMPLETED"
    ]
    assert "no text" in capsys.readouterr().err  # as logging reports an error in emit


class _CountedWrites(io.StringIO):
    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


def test_lines_are_the_lines_one_by_one_in_one_write() -> None:
    logger = logging.getLogger("weir.test.many")
    entries = [
        (logging.INFO, "run started", {"run_id": "R1"}, {}),
        (logging.DEBUG, "call answered", {"run_id": "R1"}, {}),  # below the root's level
        (logging.WARNING, "run failed", {"run_id": "R2"}, {"status": "FAILED"}),
    ]
    with only_weir_handler(False) as (out, ours), logs.bind(event_id="E1"):
        for level, message, ids, fields in entries:
            logs.line(logger, level, message, ids, fields)
        one_by_one = [_tail(x) for x in out.getvalue().splitlines()]
        counted = _CountedWrites()
        ours.setStream(counted)
        logs.lines(logger, entries)
    assert (
        [_tail(x) for x in counted.getvalue().splitlines()]
        == one_by_one
        == [
            "INFO weir.test.many run started event_id=E1 run_id=R1",
            "WARNING weir.test.many run failed event_id=E1 run_id=R2 status=FAILED",
        ]
    )
    assert counted.writes == 1


def test_lines_keep_a_filter_and_skip_a_line_that_cannot_be_formatted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    logger = logging.getLogger("weir.test.many.filtered")
    entries = [
        (logging.INFO, "hidden", {}, {}),
        (logging.INFO, "bad", {}, {"output": Unprintable()}),
        (logging.INFO, "shown", {}, {}),
    ]
    with only_weir_handler(False) as (out, _):
        logs.lines(logger, entries[1:])  # Weir's handler alone: written at once
        logger.addFilter(lambda record: record.getMessage() != "hidden")
        try:
            logs.lines(logger, [entries[0], entries[2]])  # a filter: record by record
        finally:
            logger.filters.clear()
    assert [_tail(x) for x in out.getvalue().splitlines()] == [
        "INFO weir.test.many.filtered shown",
        "INFO weir.test.many.filtered shown",
    ]
    assert "no text" in capsys.readouterr().err


def test_a_messages_own_lines_are_lines_and_a_value_put_into_it_is_not() -> None:
    """The format string is the code's: its line breaks make indented lines under the record.
    A value put into it is the input's: escaped onto its line, it cannot make one."""

    def log(logger: logging.Logger) -> None:
        logger.info("Weir is starting\n  UI  %s\n  apps  %s", "http://h:1", FORGED)

    first, *rest = _text_lines(log)
    assert first.endswith("INFO weir.test.forge Weir is starting")
    assert rest[0] == "      UI  http://h:1"  # indented under the record, its own spaces kept
    assert rest[1].startswith("      apps  x\\n12:00:01 INFO weir.run")  # one line, escaped
    assert len(rest) == 2


def test_a_value_put_in_by_repr_or_as_a_mapping_is_escaped_too() -> None:
    def log(logger: logging.Logger) -> None:
        logger.info("a %r b %d c %.1f", "x\ny", 3, 2.5)
        logger.info("named %(v)s", {"v": "p\nq"})
        logger.info(ValueError("not\nours"))  # a value logged as the message: all escaped

    assert [_tail(line) for line in _text_lines(log)] == [
        "INFO weir.test.forge a 'x\\ny' b 3 c 2.5",
        "INFO weir.test.forge named p\\nq",
        "INFO weir.test.forge not\\nours",
    ]


def test_a_block_field_is_written_as_its_lines_each_escaped_and_indented() -> None:
    error = "the app sync was refused (1 problem):\n- bad expression\n 1 +\n   ^" + FORGED

    def log(logger: logging.Logger) -> None:
        logger.warning(
            "sync of %s failed", "http://a", extra={"fields": {"error": logs.Block(error)}}
        )

    first, *rest = _text_lines(log)
    assert first.endswith("WARNING weir.test.forge sync of http://a failed")
    assert rest[:3] == [
        "    the app sync was refused (1 problem):",
        "    - bad expression",
        "     1 +",
    ]
    assert rest[3] == "       ^x"  # the caret under its column; the forged record indented
    assert rest[4] == "    12:00:01 INFO weir.run run finished run_id=R2 status=COMPLETED"
    assert all(line.startswith("    ") for line in rest)


def test_a_block_field_is_a_plain_string_in_json(captured: Captured) -> None:
    logger, out, _ = captured
    logger.warning("sync failed", extra={"fields": {"error": logs.Block("a\n ^")}})
    assert lines(out)[0]["error"] == "a\n ^"


def test_a_message_written_straight_keeps_its_own_lines() -> None:
    logger = logging.getLogger("weir.test.straight.lines")
    with only_weir_handler(False) as (out, _):
        logs.line(logger, logging.INFO, "two\nlines", {}, {"name": "a\nb"})
    assert [_tail(x) if i == 0 else x for i, x in enumerate(out.getvalue().splitlines())] == [
        'INFO weir.test.straight.lines two name="a\\nb"',
        "    lines",
    ]
