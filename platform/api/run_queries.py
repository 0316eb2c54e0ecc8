"""CEL queries over runs and events as the REST list routes and the UI lists ask them: checked
once (the checker's words on a refusal), then paged by `weir.platform.reads.query`."""

from sqlalchemy import Connection
from weir.expressions import Expression
from weir.platform.foundation.record_type import record
from weir.platform.reads import load, query, runs
from weir.platform.reads.query import QueryPage, QueryScan
from weir.platform.reads.query_fields import (
    EVENT_FIELDS,
    RUN_FIELDS,
    FunctionNames,
    compile_query,
)
from weir.platform.reads.records import EventPage, Run, RunPage, StoredEvent
from weir.platform.reads.run_state import RunState, run_states
from weir.platform.service import Platform


def run_query(source: str) -> Expression:
    """The checked run query; raises ExpressionError saying what is wrong."""
    return compile_query(source.strip(), RUN_FIELDS)


def event_query(source: str) -> Expression:
    """The checked event query; raises ExpressionError saying what is wrong."""
    return compile_query(source.strip(), EVENT_FIELDS)


async def function_names(weir: Platform) -> dict[str, FunctionNames]:
    """Function id -> its slug and app name, as a run query names them."""
    apps = {a.id: a.name for a in await weir.read(load.apps)}
    return {
        fn_id: FunctionNames(fn.slug, apps.get(fn.app_id, fn.app_id))
        for fn_id, fn in weir.registry.by_id.items()
    }


@record
class RunAnswer:
    """A page of a run query, each run's state and its trigger's name (one read)."""

    page: QueryPage[Run]
    states: dict[str, RunState]
    event_names: dict[str, str]  # trigger event id -> name


async def query_runs(
    weir: Platform, page: RunPage, expression: Expression, scan: QueryScan | None = None
) -> RunAnswer:
    """A page of the runs the query matches, with each one's state."""
    names = await function_names(weir)
    now, most = weir.clock.now_ms(), runs.max_attempts_of(weir.registry.by_id)

    def read(conn: Connection) -> RunAnswer:
        found = query.query_runs(conn, page, expression, names, scan)
        states = run_states(conn, found.rows, now, most)
        return RunAnswer(found, states, query.trigger_names(conn, found.rows))

    return await weir.read(read)


async def query_events(
    weir: Platform, page: EventPage, expression: Expression, scan: QueryScan | None = None
) -> QueryPage[StoredEvent]:
    return await weir.read(lambda c: query.query_events(c, page, expression, scan))
