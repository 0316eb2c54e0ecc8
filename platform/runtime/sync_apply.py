"""Applying an app's sync: upsert the app, replace its functions, archive the removed ones."""

import hashlib
import json
from typing import Any

from weir.platform.foundation.ids import new_id
from weir.platform.foundation.vocabulary import CapacityKind
from weir.platform.functions import AppSync, FunctionConfig
from weir.platform.observability import notes
from weir.platform.runtime.capacity import rates as rate_capacities
from weir.platform.runtime.capacity import shared_meters
from weir.platform.runtime.scopes import declared
from weir.platform.runtime.tx import Tx
from weir.platform.store.flow import capacity
from weir.platform.store.records import catalog


def apply_sync(tx: Tx, sync: AppSync) -> dict[str, Any]:
    app = catalog.get_app_by_name(tx.conn, sync.app_name)
    checksum = _checksum(sync)
    if app is not None and app.checksum == checksum and app.error is None:
        catalog.mark_app_synced(tx.conn, app.id, tx.now)
        declare_capacities(tx, app.id, sync)  # rows of a store migrated since the last sync
        tx.notes.append(_synced(sync, modified=False))
        return {"ok": True, "modified": False, "app_id": app.id}
    shared_meters.check_rates(tx.conn, app.id if app is not None else None, sync)
    app_id = app.id if app is not None else _new_app(tx, sync)
    catalog.record_app_sync(
        tx.conn,
        app_id,
        url=sync.url,
        sdk=sync.sdk,
        framework=sync.framework,
        checksum=checksum,
        at=tx.now,
    )
    _replace_functions(tx, app_id, sync.functions)
    declare_capacities(tx, app_id, sync)
    tx.notes.append(_synced(sync, modified=True))
    return {"ok": True, "modified": True, "app_id": app_id, "sync_id": new_id(tx.now)}


def _checksum(sync: AppSync) -> str:
    text = json.dumps([sync.url, sync.checksum], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _new_app(tx: Tx, sync: AppSync) -> str:
    app_id = new_id(tx.now)
    catalog.insert_app(tx.conn, app_id, sync.app_name, sync.url, tx.now)
    return app_id


def _replace_functions(tx: Tx, app_id: str, configs: tuple[FunctionConfig, ...]) -> None:
    existing = {fn.slug: fn for fn in catalog.app_functions(tx.conn, app_id)}
    for config in configs:
        _upsert_function(tx, app_id, config, existing.get(config.slug))
    wanted = {config.slug for config in configs}
    for slug, fn in existing.items():
        if slug not in wanted and not fn.archived:
            catalog.archive_function(tx.conn, fn.id, tx.now)


def _upsert_function(
    tx: Tx, app_id: str, config: FunctionConfig, stored: catalog.StoredFunction | None
) -> None:
    text = json.dumps(config.to_json(), separators=(",", ":"), sort_keys=True)
    if stored is None:
        other = catalog.get_function_by_slug(tx.conn, config.slug)
        if other is not None:  # the slug moved here from another app
            new = catalog.FunctionVersion(app_id, config.name, text, other.version + 1, tx.now)
            catalog.save_function_version(tx.conn, other.id, new)
            return
        new = catalog.FunctionVersion(app_id, config.name, text, 1, tx.now)
        catalog.insert_function(tx.conn, new_id(tx.now), config.slug, new)
        return
    if stored.config_text != text or stored.archived:
        new = catalog.FunctionVersion(app_id, config.name, text, stored.version + 1, tx.now)
        catalog.save_function_version(tx.conn, stored.id, new)


def declare_capacities(tx: Tx, app_id: str, sync: AppSync) -> None:
    """Create the capacity of every limit declared for the first time; a capacity that exists
    only learns the declared value (never overwritten from code: a difference is drift)."""
    for config in sync.functions:
        stored = catalog.get_function_by_slug(tx.conn, config.slug)
        fn_id = stored.id if stored is not None else ""
        for decl in declared(fn_id, config.slug, app_id, sync.app_name, config):
            kind = CapacityKind.CONCURRENCY
            capacity.declare(tx.conn, kind, decl.capacity_id, decl.name, decl.limit, tx.now)
        for rate in rate_capacities.declared(fn_id, config.slug, config):
            meter = CapacityKind.METER
            capacity.declare(tx.conn, meter, rate.capacity_id, rate.name, rate.limit, tx.now)


def _synced(sync: AppSync, *, modified: bool) -> notes.Note:
    said = {"app": sync.app_name, "url": sync.url, "functions": len(sync.functions)}
    return notes.Note(notes.APP_SYNCED, fields={**said, "modified": modified})


def remove_app(tx: Tx, name: str) -> bool:
    """Delete the app named `name`: its functions are archived (runs under way finish, no
    event starts new ones); syncing it again brings it back. False if there is no such app."""
    app = catalog.get_app_by_name(tx.conn, name)
    if app is None:
        return False
    catalog.delete_app(tx.conn, app.id, tx.now)
    return True
