"""Flow-control gates: pure algorithms over (config, stored state, now) returning a decision.

Nothing here reads the wall clock, touches the network or runs SQL. Time is integer
milliseconds since the epoch, passed in by the caller; randomness is injected. State is a
small immutable record of JSON-friendly fields that the store persists and hands back.
"""
