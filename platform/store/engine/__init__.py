"""The store's private engine: schema, compiled hot statements, dialect differences, JSON text,
the writer's hand-backs, WAL checkpoints and LISTEN. Only `weir.platform.store` (and the
migrations) may import it; import-linter checks that."""
