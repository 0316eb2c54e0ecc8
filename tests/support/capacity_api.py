"""The live capacity routes as the API tests call them."""

from typing import Any
from urllib.parse import quote

from fastapi.testclient import TestClient


def capacities(client: TestClient) -> dict[str, dict[str, Any]]:
    """Every stored capacity, by name."""
    resp = client.get("/v1/capacity")
    assert resp.status_code == 200, resp.text
    return {c["name"]: c for c in resp.json()["data"]}


def change(client: TestClient, action: str, name: str, **body: Any) -> Any:
    """POST /v1/capacity/{name}/{action} (set or reset) with `body`; the response."""
    return client.post(f"/v1/capacity/{quote(name, safe='')}/{action}", json=body)
