"""The executor: drives runs over HTTP with the SDK protocol (docs/protocol.md)."""
