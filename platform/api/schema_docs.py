"""What the OpenAPI schema says about the API's bodies and answers, beyond what FastAPI infers
from the handlers (which read raw bodies and answer with JSONResponse). Tools and the
schemathesis fuzz test (tests/api/test_openapi_fuzz.py) hold the API to this."""

from typing import Any

JSON = "application/json"
ERROR = {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}
WHY = {
    400: "the input is invalid; `error` says what was wrong and what is allowed",
    401: "start mode: credentials missing or wrong (the admin login, the signing key or the "
    "event key, by route)",
    404: "nothing has that id",
    409: "the request cannot be carried out in the current state; `error` says why",
    413: "the request body is over the route's cap",
    415: "the body is not sent as JSON (`Content-Type: application/json`)",
    422: "the input is well-formed but refused (a signal the waiting run's `if` rejects)",
    429: "start mode: too many wrong keys from this address; retry after `Retry-After` seconds",
    503: "as many such requests as Weir takes at once are under way; try again shortly",
}


def errors(*codes: int, schema: dict[str, Any] = ERROR) -> dict[int | str, dict[str, Any]]:
    return {
        code: {"description": WHY[code], "content": {JSON: {"schema": schema}}} for code in codes
    }


def json_body(schema: dict[str, Any]) -> dict[str, Any]:
    """`openapi_extra` documenting a JSON request body the handler reads itself."""
    body = {"required": True, "content": {JSON: {"schema": schema}}}
    return {"requestBody": body, "responses": errors(415)}  # the guard's, before the handler


EVENT = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 512},
        "data": {"type": ["object", "null"]},
        "id": {"type": ["string", "null"]},
        "ts": {"type": ["integer", "null"], "description": "Unix milliseconds, 1980 to 2100"},
        "user": {"type": ["object", "null"]},
        "v": {"type": ["string", "null"]},
    },
    "required": ["name"],
}
EVENTS = {"oneOf": [EVENT, {"type": "array", "items": EVENT, "maxItems": 5000}]}
EVENT_ERROR = {
    "type": "object",
    "properties": {
        "ids": {"type": "array", "items": {"type": "string"}},
        "status": {"type": "integer"},
        "error": {"type": "string"},
    },
    "required": ["ids", "status", "error"],
}
SYNC = {
    "type": "object",
    "properties": {
        "url": {"type": "string"},
        "appname": {"type": "string"},
        "functions": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["url", "appname", "functions"],
}
GQL_ERRORS = {
    "type": "object",
    "properties": {"errors": {"type": "array", "items": {"type": "object"}}},
    "required": ["errors"],
}
GQL_QUERY = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "variables": {"type": "object"},
        "operationName": {"type": "string"},
    },
    "required": ["query"],
}
