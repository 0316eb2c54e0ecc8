"""Connect: apps Weir cannot reach over HTTP connect out to it over a WebSocket.

`wire` holds the protobuf messages, `gateway` the connected workers per app, the requests
in flight and their leases, `transport` the executor's way of calling a function over them.
Weir speaks the protocol of the official SDK's `inngest.connect` (docs/protocol.md §13).
"""
