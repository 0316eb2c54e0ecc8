"""Webhook rows on both backends: the newest deliveries kept per source, a refused delivery
replayed at most once, a source changed only at the revision read, a body kept byte for byte."""

import pytest
from weir.platform.foundation.ids import new_id
from weir.platform.store.records import webhooks as rows

from tests.support.store_kit import Store


def delivery(source_id: str, n: int, status: str = "refused") -> rows.StoredDelivery:
    body = bytes([0, 255, n % 256]) + b"\r\n raw"  # not UTF-8, with a NUL: kept as bytes
    return rows.StoredDelivery(
        new_id(1_800_000_000_000 + n), source_id, n, status, "transform_error", "m", None,
        body, "{}", "{}",
    )  # fmt: skip


def test_only_the_newest_deliveries_of_each_source_are_kept(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rows, "KEEP_DELIVERIES", 3)
    monkeypatch.setattr(rows, "PRUNE_EVERY", 1)
    for n in range(8):
        store.write(lambda conn, n=n: rows.insert_delivery(conn, delivery("a", n)))
    store.write(lambda conn: rows.insert_delivery(conn, delivery("b", 0)))
    kept = store.read(lambda conn: rows.deliveries(conn, "a"))
    assert [d.received_at for d in kept] == [7, 6, 5]
    assert len(store.read(lambda conn: rows.deliveries(conn, "b"))) == 1
    assert kept[0].body == delivery("a", 7).body


def test_a_refused_delivery_is_replayed_at_most_once(store: Store) -> None:
    first = delivery("a", 1)
    store.write(lambda conn: rows.insert_delivery(conn, first))
    assert store.write(lambda conn: rows.mark_replayed(conn, first.id, "replayed", "E1", None))
    assert not store.write(lambda conn: rows.mark_replayed(conn, first.id, "replayed", "E2", None))
    found = store.read(lambda conn: rows.delivery(conn, first.id))
    assert found is not None and (found.status, found.event_id) == ("replayed", "E1")


def test_a_source_changes_only_at_the_revision_read(store: Store) -> None:
    source = rows.StoredSource("wh_x", "one", "{}", 1, 5, 5)
    store.write(lambda conn: rows.insert_source(conn, source))
    assert store.write(lambda conn: rows.update_source(conn, "wh_x", "two", "{1}", 1, 9))
    assert not store.write(lambda conn: rows.update_source(conn, "wh_x", "three", "{2}", 1, 9))
    found = store.read(lambda conn: rows.source(conn, "two"))
    assert found is not None and (found.id, found.revision, found.config) == ("wh_x", 2, "{1}")
    assert store.read(lambda conn: rows.source_by_id(conn, "two")) is None  # by id only
    store.write(lambda conn: rows.insert_delivery(conn, delivery("wh_x", 1)))
    assert store.write(lambda conn: rows.delete_source(conn, "wh_x"))
    assert store.read(lambda conn: rows.deliveries(conn, "wh_x")) == []
