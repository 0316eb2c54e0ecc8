"""The store's records: rows decoded once into immutable records (runs, steps, waits, events,
apps and functions), with the named writes on each."""
