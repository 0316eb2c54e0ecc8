"""The address of functions served over Connect (docs/protocol.md §13).

A Connect worker cannot be called over HTTP: the official SDK registers its functions under
`wss://connect?fnId=…`, and Weir keeps that as their URL. The executor sends calls to such a
URL over the worker's socket instead of HTTP.
"""

from typing import Any
from urllib.parse import urlsplit

from weir.platform.foundation.jsonvalues import control_char

CONNECT_URL = "wss://connect"


def is_connect_url(value: Any) -> bool:
    if not isinstance(value, str) or control_char(value) or " " in value:
        return False
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme == "wss" and parts.hostname == "connect" and parts.port is None
