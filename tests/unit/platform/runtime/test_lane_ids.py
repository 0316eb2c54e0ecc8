"""Finding a lane by its key: `lane_id` gives the id admission gives the runs of that key, for a
function's own lanes and for named ones, with and without a key expression, for strings,
numbers and a failing key (the empty key). Runs on SQLite and PostgreSQL."""

import pytest
from weir.platform.functions import Lane
from weir.platform.runtime.flow.fifo import lane_id

from tests.support.flow_harness import NOON, Harness, config

OPTIONS = [
    Lane(key="event.data.c", name=None),
    Lane(key=None, name="billing"),
    Lane(key="event.data.c", name="billing"),
    Lane(key="string(event.data.n) + '/' + event.data.c", name=None),
]
DATAS = [{"c": "acme", "n": 1}, {"c": "zed ünï", "n": 2}, {"n": 3}, {"c": "x" * 40, "n": 4}]


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: f"{o.key}|{o.name}")
def test_the_id_from_a_lanes_shown_key_is_the_id_its_runs_have(
    database_url: str, option: Lane
) -> None:
    h = Harness(database_url, config(lane=option))
    for i, data in enumerate(DATAS):
        h.send(NOON + i, data)
    runs = h.runs()
    assert len(runs) == len(DATAS)
    for run in runs:
        lane = run.keys["lane"]
        assert lane_id("fn", option, lane["key"]) == lane["hash"], (option, lane)
