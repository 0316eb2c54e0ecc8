"""Read models: the named queries the API and the UI ask, each answering a typed view.

Handlers in `weir.platform.api` and `weir.web` read through these (inside `Platform.read`)
instead of assembling store calls themselves; `records` re-exports the store's records they
shape, so neither layer imports `weir.platform.store`.
"""
