"""weir.sdk's concurrency scopes: the `"weir"` block they register, and their checks at serve()."""

from typing import Any

import pytest
from fastapi import FastAPI
from weir.platform.functions import parse_sync
from weir.sdk import Context, InvalidFunctionsError, Scope, Weir, serve
from weir.sdk._client import compile_all


async def handler(ctx: Context) -> None:
    return None


def registered(weir: Weir) -> dict[str, Any]:
    [compiled] = compile_all(weir.functions)
    return compiled.registered("http://127.0.0.1:1/api/inngest")


def test_scopes_and_the_app_limit_go_in_the_weir_block_the_platform_reads() -> None:
    weir = Weir("shop", dev=True, app_limit=20)
    scopes = [Scope(1, name="printer"), Scope(2, key="event.data.customer")]
    weir.function("print", event="shop/print", scopes=scopes)(handler)
    config = registered(weir)
    assert config["weir"] == {
        "scopes": [
            {"name": "printer", "limit": 1},
            {"key": "event.data.customer", "limit": 2},
        ],
        "appLimit": 20,
    }
    body = {"appname": "shop", "url": "http://127.0.0.1:1/api/inngest", "functions": [config]}
    [parsed] = parse_sync(body).functions
    assert parsed.app_limit == 20
    assert [(s.name, s.key, s.limit) for s in parsed.scopes] == [
        ("printer", None, 1),
        (None, "event.data.customer", 2),
    ]


def test_a_function_without_scopes_sends_no_weir_block() -> None:
    weir = Weir("shop", dev=True)
    weir.function("plain", event="shop/x")(handler)
    assert "weir" not in registered(weir)


def test_the_function_s_app_limit_overrides_the_app_s() -> None:
    weir = Weir("shop", dev=True, app_limit=20)
    weir.function("own", event="shop/x", app_limit=3)(handler)
    assert registered(weir)["weir"] == {"appLimit": 3}


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"scopes": [Scope(1, name=f"s{i}") for i in range(9)]}, "too_many_scopes"),
        ({"scopes": [Scope(0, name="s")]}, "scopes[0].limit: must be an integer >= 1"),
        ({"scopes": [Scope(1)]}, "scopes[0]: needs a name, a key, or both"),
        ({"scopes": [Scope(1, name="a\nb")]}, "scopes[0].name: must be 1 to 512 UTF-8 bytes"),
        ({"scopes": [Scope(1, name="x" * 513)]}, "scopes[0].name: must be 1 to 512 UTF-8 bytes"),
        ({"scopes": [Scope(1, key=" ")]}, "scopes[0].key: must be a non-empty CEL expression"),
        ({"scopes": ["printer"]}, "scopes[0]: must be a Scope(...)"),
        ({"app_limit": 0}, "app_limit: must be an integer >= 1"),
    ],
)
def test_bad_scopes_are_refused_at_serve(options: dict[str, Any], fragment: str) -> None:
    weir = Weir("app", dev=True)
    weir.function("f", event="a", **options)(handler)
    with pytest.raises(InvalidFunctionsError) as caught:
        serve(FastAPI(), weir)
    assert any(fragment in problem for problem in caught.value.problems), caught.value.problems
