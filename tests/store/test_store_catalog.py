"""Apps and functions as records: what a sync writes comes back typed, config decoded once."""

from weir.platform.store.records import catalog

from tests.support.store_kit import Store

CONFIG = '{"name":"Send","slug":"app-send","triggers":[{"event":"t/e"}]}'


def version(app_id: str, at: int, n: int = 1, text: str = CONFIG) -> catalog.FunctionVersion:
    return catalog.FunctionVersion(app_id, "Send", text, n, at)


def test_an_app_comes_back_as_inserted_and_synced(store: Store) -> None:
    store.write(lambda c: catalog.insert_app(c, "app-1", "shop", "http://127.0.0.1:1/x", 5))
    assert store.read(lambda c: catalog.get_app_by_name(c, "shop")) == catalog.App(
        "app-1", "shop", "http://127.0.0.1:1/x", "", None, "", None, None, 5
    )
    store.write(
        lambda c: catalog.record_app_sync(
            c, "app-1", url="http://h/y", sdk="py:v1", framework="fast_api", checksum="c1", at=9
        )
    )
    store.write(lambda c: catalog.mark_app_synced(c, "app-1", 12))
    [app] = store.read(catalog.list_apps)
    assert (app.url, app.sdk, app.framework, app.checksum, app.synced_at) == (
        "http://h/y",
        "py:v1",
        "fast_api",
        "c1",
        12,
    )
    assert store.read(lambda c: catalog.get_app_by_name(c, "nobody")) is None


def test_functions_carry_their_decoded_config_version_and_app_sdk(store: Store) -> None:
    store.write(lambda c: catalog.insert_app(c, "app-1", "shop", "http://h/x", 5))
    store.write(
        lambda c: catalog.record_app_sync(
            c, "app-1", url="http://h/x", sdk="weir-py:v0.1.0", framework=None, checksum="", at=6
        )
    )
    store.write(lambda c: catalog.insert_function(c, "fn-1", "app-send", version("app-1", 7)))
    [fn] = store.read(catalog.all_functions)
    assert fn.config == {"name": "Send", "slug": "app-send", "triggers": [{"event": "t/e"}]}
    assert (fn.config_text, fn.version, fn.archived, fn.app_sdk) == (
        CONFIG,
        1,
        False,
        "weir-py:v0.1.0",
    )
    assert store.read(lambda c: catalog.catalog_version(c)) == 7


def test_a_new_version_revives_an_archived_function_and_moves_the_catalog(store: Store) -> None:
    store.write(lambda c: catalog.insert_app(c, "app-1", "shop", "http://h/x", 5))
    store.write(lambda c: catalog.insert_function(c, "fn-1", "app-send", version("app-1", 7)))
    store.write(lambda c: catalog.archive_function(c, "fn-1", 8))
    [archived] = store.read(lambda c: catalog.app_functions(c, "app-1"))
    assert archived.archived and store.read(catalog.catalog_version) == 8
    store.write(lambda c: catalog.save_function_version(c, "fn-1", version("app-1", 9, 2)))
    fn = store.read(lambda c: catalog.get_function_by_slug(c, "app-send"))
    assert fn is not None and (fn.version, fn.archived) == (2, False)
    assert store.read(catalog.catalog_version) == 9
