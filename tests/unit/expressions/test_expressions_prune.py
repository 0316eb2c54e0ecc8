"""Pruning an activation to the referenced paths."""

from __future__ import annotations

from typing import Any

from weir.expressions._prune import build_trie, minimal_paths, prune


def pruned(activation: dict[str, Any], *paths: tuple[str, ...]) -> dict[str, Any]:
    return prune(activation, build_trie(minimal_paths(paths)))


def test_minimal_paths_sorts_deduplicates_and_drops_extensions() -> None:
    paths = [("event", "data", "a", "b"), ("event", "name"), ("event", "data", "a")]
    assert minimal_paths([*paths, ("event", "name")]) == (
        ("event", "data", "a"),
        ("event", "name"),
    )
    assert minimal_paths([("event", "data", "ab"), ("event", "data", "a")]) == (
        ("event", "data", "a"),
        ("event", "data", "ab"),
    )


def test_only_referenced_fields_are_kept() -> None:
    event = {"name": "n", "id": "i", "data": {"a": {"b": 1, "c": 2}, "big": [0] * 1000}}
    assert pruned({"event": event, "async": {}}, ("event", "data", "a", "b")) == {
        "event": {"data": {"a": {"b": 1}}}
    }


def test_a_path_end_keeps_the_whole_value_without_copying_it() -> None:
    items = [{"id": 1}]
    result = pruned({"event": {"data": {"items": items, "x": 1}}}, ("event", "data", "items"))
    assert result["event"]["data"]["items"] is items


def test_a_missing_key_stays_missing_and_a_non_dict_is_kept_whole() -> None:
    event = {"data": {"s": "text", "xs": [1, 2], "n": None}}
    paths = [("event", "data", "s", "len"), ("event", "data", "xs", "a"), ("event", "data", "z")]
    assert pruned({"event": event}, *paths, ("event", "data", "n", "q")) == {
        "event": {"data": {"s": "text", "xs": [1, 2], "n": None}}
    }
    assert pruned({}, ("event", "name")) == {}


def test_a_whole_variable_is_passed_as_is() -> None:
    event = {"data": {"a": 1}}
    assert pruned({"event": event}, ("event",), ("event", "data"))["event"] is event


def test_very_deep_paths_need_no_recursion() -> None:
    depth = 5_000  # beyond Python's default recursion limit
    payload: Any = "leaf"
    for _ in range(depth):
        payload = {"a": payload, "b": "dropped"}
    result = pruned({"event": payload}, ("event", *["a"] * depth))
    node = result["event"]
    for _ in range(depth):
        assert set(node) == {"a"}
        node = node["a"]
    assert node == "leaf"
