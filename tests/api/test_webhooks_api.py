"""Webhooks end to end over the HTTP API, on both backends: a source made over /v1/webhooks,
deliveries signed by the providers' own libraries posted to /webhooks/{id}, the event stored
and its runs started, refusals noted with their reasons, a refused delivery replayed once its
transform is fixed, duplicates deduplicated by the event id rule."""

import hashlib
import hmac
import json
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import standardwebhooks
import stripe
from fastapi.testclient import TestClient
from slack_sdk.signature import SignatureVerifier
from sqlalchemy import create_engine, text
from weir.app import create_app

from tests.api.helpers import LOCAL, function, store_rows, sync_body
from tests.api.start_mode import TOKEN, start_settings

STRIPE_SECRET = "whsec_test_0123456789abcdef"
STRIPE_SOURCE = {
    "name": "stripe-prod",
    "scheme": "stripe",
    "secrets": [STRIPE_SECRET],
    "transform": {"name": "'stripe/' + body.type", "data": "body", "id": "body.id"},
}
PAID = {"id": "evt_1", "type": "invoice.paid", "data": {"object": {"amount": 1200}}}


def create(client: TestClient, source: dict[str, Any] = STRIPE_SOURCE) -> dict[str, Any]:
    resp = client.post("/v1/webhooks", json=source)
    assert resp.status_code == 201, resp.text
    found: dict[str, Any] = resp.json()["data"]
    return found


def stripe_post(
    client: TestClient, path: str, payload: Any, secret: str = STRIPE_SECRET, ts: int | None = None
) -> Any:
    body = json.dumps(payload)
    header = stripe.WebhookSignature.generate_signature_header(body, secret, ts)
    headers = {"Stripe-Signature": header, "Content-Type": "application/json"}
    return client.post(path, content=body.encode(), headers=headers)


def deliveries(client: TestClient, name: str, **query: str) -> list[dict[str, Any]]:
    resp = client.get(f"/v1/webhooks/{name}/deliveries", params=query)
    assert resp.status_code == 200, resp.text
    found: list[dict[str, Any]] = resp.json()["data"]
    return found


def test_a_signed_delivery_becomes_an_event_that_starts_its_runs(client: TestClient) -> None:
    sync = client.post(
        "/fn/register", json=sync_body(function("paid", event="stripe/invoice.paid"))
    )
    assert sync.status_code == 200, sync.text
    source = create(client)
    assert source["path"] == f"/webhooks/{source['id']}" and len(source["id"]) >= 32
    assert source["secrets"] == ["…" + STRIPE_SECRET[-4:]]  # never shown back whole
    resp = stripe_post(client, source["path"], PAID)
    assert resp.status_code == 200, resp.text
    (event_id,) = resp.json()["ids"]
    event = client.get(f"/v1/events/{event_id}").json()["data"]
    assert event["name"] == "stripe/invoice.paid"
    assert len(client.get(f"/v1/events/{event_id}/runs").json()["data"]) == 1
    (noted,) = deliveries(client, "stripe-prod")
    assert (noted["status"], noted["event_id"], noted["reason"]) == ("accepted", event_id, None)


def test_a_redelivery_is_deduplicated_by_the_event_id(client: TestClient) -> None:
    sync = client.post(
        "/fn/register", json=sync_body(function("paid", event="stripe/invoice.paid"))
    )
    assert sync.status_code == 200, sync.text
    path = create(client)["path"]
    first = stripe_post(client, path, PAID)
    again = stripe_post(client, path, PAID)  # Stripe retries with the same event id
    assert first.status_code == again.status_code == 200
    assert store_rows(client, "SELECT count(*) FROM runs") == [(1,)]
    event_id = again.json()["ids"][0]
    outcome = f"SELECT outcome FROM event_outcomes WHERE event_id = '{event_id}'"
    assert store_rows(client, outcome) == [("duplicate_event_id",)]


def test_forged_stale_and_oversized_deliveries_are_refused_and_noted(client: TestClient) -> None:
    source = create(client, STRIPE_SOURCE | {"max_body_bytes": 2048})
    path = source["path"]
    wrong = stripe_post(client, path, PAID, secret="whsec_wrong_secret_000")
    assert wrong.status_code == 401 and wrong.json()["reason"] == "bad_signature"
    stale = stripe_post(client, path, PAID, ts=int(time.time()) - 301)
    assert stale.status_code == 400 and stale.json()["reason"] == "stale_timestamp"
    future = stripe_post(client, path, PAID, ts=int(time.time()) + 301)
    assert future.status_code == 400 and future.json()["reason"] == "future_timestamp"
    unsigned = client.post(path, json=PAID)
    assert unsigned.status_code == 401 and unsigned.json()["reason"] == "missing_signature"
    big = stripe_post(client, path, PAID | {"pad": "x" * 4096})
    assert big.status_code == 413
    # a body changed after signing: the raw bytes are what is verified
    body = json.dumps(PAID)
    header = stripe.WebhookSignature.generate_signature_header(body, STRIPE_SECRET)
    tampered = body.replace("1200", "1201").encode()
    resp = client.post(path, content=tampered, headers={"Stripe-Signature": header})
    assert resp.status_code == 401
    assert store_rows(client, "SELECT count(*) FROM events") == [(0,)]
    reasons = [d["reason"] for d in deliveries(client, "stripe-prod", status="refused")]
    assert sorted(reasons) == sorted(
        [
            "bad_signature",
            "stale_timestamp",
            "future_timestamp",
            "missing_signature",
            "too_large",
            "bad_signature",
        ]
    )
    assert all(not d["replayable"] for d in deliveries(client, "stripe-prod"))
    # filtered by reason
    assert len(deliveries(client, "stripe-prod", reason="bad_signature")) == 2


def test_an_unknown_source_is_404_and_a_rotated_secret_is_accepted(client: TestClient) -> None:
    assert client.post("/webhooks/wh_nope", json={}).status_code == 404
    source = create(client)
    new = "whsec_next_secret_abcdef01"
    body = STRIPE_SOURCE | {"secrets": [new, STRIPE_SECRET], "revision": source["revision"]}
    changed = client.put("/v1/webhooks/stripe-prod", json=body)
    assert changed.status_code == 200, changed.text
    assert changed.json()["data"]["id"] == source["id"]  # the URL stays
    assert stripe_post(client, source["path"], PAID).status_code == 200
    assert (
        stripe_post(client, source["path"], PAID | {"id": "evt_2"}, secret=new).status_code == 200
    )
    stale_revision = client.put("/v1/webhooks/stripe-prod", json=body)
    assert stale_revision.status_code == 409


def test_a_failed_transform_is_replayed_once_it_is_fixed(client: TestClient) -> None:
    broken = STRIPE_SOURCE | {"transform": {"name": "'stripe/' + body.kind", "id": "body.id"}}
    source = create(client, broken)
    refused = stripe_post(client, source["path"], PAID)
    assert refused.status_code == 422 and refused.json()["reason"] == "transform_error"
    delivery = refused.json()["delivery"]
    (noted,) = deliveries(client, "stripe-prod")
    assert noted["replayable"] and noted["id"] == delivery
    replay = f"/v1/webhooks/stripe-prod/deliveries/{delivery}/replay"
    still = client.post(replay)
    assert still.status_code == 422  # the transform is still broken: nothing stored
    assert store_rows(client, "SELECT count(*) FROM events") == [(0,)]
    fixed = STRIPE_SOURCE | {"revision": source["revision"]}
    assert client.put("/v1/webhooks/stripe-prod", json=fixed).status_code == 200
    done = client.post(replay)
    assert done.status_code == 200, done.text
    (event_id,) = done.json()["ids"]
    assert client.get(f"/v1/events/{event_id}").json()["data"]["name"] == "stripe/invoice.paid"
    assert client.post(replay).status_code == 409  # once only
    (noted,) = deliveries(client, "stripe-prod")
    assert (noted["status"], noted["event_id"]) == ("replayed", event_id)


def test_a_bad_signature_is_never_replayed(client: TestClient) -> None:
    source = create(client)
    wrong = stripe_post(client, source["path"], PAID, secret="whsec_wrong_secret_000")
    replay = f"/v1/webhooks/stripe-prod/deliveries/{wrong.json()['delivery']}/replay"
    assert client.post(replay).status_code == 409


def test_a_source_is_checked_whole_when_saved(client: TestClient) -> None:
    bad = {
        "name": "bad name!",
        "scheme": "stripe",
        "secrets": ["a", "b", "c"],
        "transform": {"name": "body.type +", "data": "unknown.x"},
        "rate_per_s": 0,
    }
    resp = client.post("/v1/webhooks", json=bad)
    assert resp.status_code == 400
    problems = " | ".join(resp.json()["problems"])
    for part in (
        "name must be",
        "secrets must be",
        "transform.name",
        "transform.data",
        "rate_per_s",
    ):
        assert part in problems, problems
    assert client.post("/v1/webhooks", json=STRIPE_SOURCE | {"scheme": "nope"}).status_code == 400
    create(client)
    assert client.post("/v1/webhooks", json=STRIPE_SOURCE).status_code == 409  # name taken


def test_a_sample_payload_shows_the_event_it_would_make(client: TestClient) -> None:
    create(client)
    sample = {"sample": {"body": PAID}}
    resp = client.post("/v1/webhooks/stripe-prod/test", json=sample)
    assert resp.status_code == 200, resp.text
    event = resp.json()["data"]["event"]
    assert (event["name"], event["id"], event["data"]) == ("stripe/invoice.paid", "evt_1", PAID)
    other = sample | {"transform": {"name": "'x/' + headers['x-kind']", "data": "{'n': body.id}"}}
    other["sample"] = {"body": PAID, "headers": {"X-Kind": "k"}}
    tried = client.post("/v1/webhooks/stripe-prod/test", json=other).json()["data"]["event"]
    assert (tried["name"], tried["data"]) == ("x/k", {"n": "evt_1"})
    failing = sample | {"transform": {"name": "body.nothing"}}
    refused = client.post("/v1/webhooks/stripe-prod/test", json=failing).json()["data"]
    assert refused["event"] is None and refused["reason"] == "transform_error"
    assert store_rows(client, "SELECT count(*) FROM events") == [(0,)]


def test_standard_webhooks_with_a_timestamp_transform(client: TestClient) -> None:
    secret = "whsec_" + "c2VjcmV0LXNlY3JldC1zZWNyZXQ="
    transform = {
        "name": "'app/' + body.type",
        "id": "headers['webhook-id']",
        "ts": "int(headers['webhook-timestamp']) * 1000",
    }
    source = create(
        client, {"name": "svix", "scheme": "standard", "secrets": [secret], "transform": transform}
    )
    now = int(time.time())
    body = json.dumps({"type": "user.created", "data": {"id": 7}})
    sign = standardwebhooks.Webhook(secret).sign("msg_9", datetime.fromtimestamp(now, UTC), body)
    headers = {"webhook-id": "msg_9", "webhook-timestamp": str(now), "webhook-signature": sign}
    resp = client.post(source["path"], content=body.encode(), headers=headers)
    assert resp.status_code == 200, resp.text
    event = client.get(f"/v1/events/{resp.json()['ids'][0]}").json()["data"]
    assert (event["name"], event["ts"]) == ("app/user.created", now * 1000)


def test_a_slack_form_body_and_a_generic_hmac(client: TestClient) -> None:
    secret = "slack-signing-secret-1"
    slack = {
        "name": "slack",
        "scheme": "slack",
        "secrets": [secret],
        "transform": {"name": "'slack/' + body.command", "data": "body"},
    }
    path = create(client, slack)["path"]
    form = b"command=%2Fdeploy&text=api"
    ts = str(int(time.time()))
    sig = (
        "v0=" + hmac.new(secret.encode(), b"v0:" + ts.encode() + b":" + form, "sha256").hexdigest()
    )
    headers = {
        "X-Slack-Signature": sig,
        "X-Slack-Request-Timestamp": ts,
        "Content-Type": "application/x-www-form-urlencoded",
    }
    resp = client.post(path, content=form, headers=headers)
    assert resp.status_code == 200, resp.text
    event = client.get(f"/v1/events/{resp.json()['ids'][0]}").json()["data"]
    assert event["name"] == "slack//deploy" and event["data"] == {
        "command": "/deploy",
        "text": "api",
    }
    partner = {
        "name": "partner",
        "scheme": "hmac",
        "secrets": ["partner-key-1"],
        "hmac": {"header": "X-Signature", "prefix": "sha1=", "algorithm": "sha1"},
        "transform": {"name": "'partner/' + query.kind"},
    }
    path = create(client, partner)["path"]
    digest = hmac.new(b"partner-key-1", b'{"a":1}', hashlib.sha1).hexdigest()
    resp = client.post(
        path + "?kind=order",
        content=b'{"a":1}',
        headers={"X-Signature": "sha1=" + digest, "Content-Type": "application/json"},
    )
    assert resp.status_code == 200, resp.text


def test_a_declarative_file_creates_changes_and_keeps(client: TestClient) -> None:
    file = {"webhooks": [STRIPE_SOURCE, STRIPE_SOURCE | {"name": "stripe-test"}]}
    first = client.post("/v1/webhooks/apply", json=file)
    assert [s["action"] for s in first.json()["data"]] == ["created", "created"]
    again = client.post("/v1/webhooks/apply", json=file)
    assert [s["action"] for s in again.json()["data"]] == ["unchanged", "unchanged"]
    ids = [s["id"] for s in first.json()["data"]]
    changed = {"webhooks": [STRIPE_SOURCE | {"rate_per_s": 5}]}
    done = client.post("/v1/webhooks/apply", json=changed).json()["data"]
    assert (done[0]["action"], done[0]["id"], done[0]["rate_per_s"]) == ("changed", ids[0], 5)
    bad = {"webhooks": [STRIPE_SOURCE | {"rate_per_s": 9}, {"name": "x"}]}
    assert client.post("/v1/webhooks/apply", json=bad).status_code == 400
    assert client.get("/v1/webhooks/stripe-prod").json()["data"]["rate_per_s"] == 5  # unchanged
    assert client.delete("/v1/webhooks/stripe-test").status_code == 200
    assert [s["name"] for s in client.get("/v1/webhooks").json()["data"]] == ["stripe-prod"]


def test_over_its_rate_a_source_answers_429(client: TestClient) -> None:
    path = create(client, STRIPE_SOURCE | {"rate_per_s": 2})["path"]
    answers = [stripe_post(client, path, PAID | {"id": f"evt_{i}"}).status_code for i in range(6)]
    assert 429 in answers and answers[:2] == [200, 200]
    # a 429 is not noted as a delivery (a flood would fill the writer) but it is counted
    limited = answers.count(429)
    assert len(deliveries(client, "stripe-prod")) == len(answers) - limited
    metrics = client.get("/metrics").text
    line = 'weir_webhook_deliveries_total{outcome="rate_limited",source="stripe-prod"}'
    assert f"{line} {float(limited)}" in metrics
    accepted = 'weir_webhook_deliveries_total{outcome="accepted",source="stripe-prod"}'
    assert f"{accepted} {float(len(answers) - limited)}" in metrics


def test_in_start_mode_the_hook_is_open_and_management_needs_the_login(tmp_path: Path) -> None:
    with TestClient(create_app(start_settings(tmp_path)), base_url=LOCAL) as client:
        assert client.get("/v1/webhooks").status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        resp = client.post("/v1/webhooks", json=STRIPE_SOURCE, headers=auth)
        assert resp.status_code == 201, resp.text
        path = resp.json()["data"]["path"]
        assert stripe_post(client, path, PAID).status_code == 200  # no login: the signature
        assert client.post(path, json=PAID).status_code == 401


def test_a_transform_over_its_budget_is_refused_and_noted(client: TestClient) -> None:
    nested = {"name": "'x'", "id": "size(body.items.map(x, body.items.map(y, x + y)))"}
    refused = client.post("/v1/webhooks", json=STRIPE_SOURCE | {"transform": nested})
    assert refused.status_code == 400 and "nested" in refused.text  # the checker, when saved
    runaway = {"name": "'x'", "data": "{'all': body.items.map(x, [x, x, x, x])}"}
    source = create(client, STRIPE_SOURCE | {"transform": runaway})
    resp = stripe_post(client, source["path"], PAID | {"items": list(range(20_000))})
    assert resp.status_code == 422, resp.text
    assert resp.json()["reason"] == "transform_budget"
    (noted,) = deliveries(client, "stripe-prod")
    assert noted["replayable"] and "budget" in noted["message"]


def test_a_path_data_passes_a_large_body_and_a_wrong_ts_is_an_invalid_event(
    client: TestClient,
) -> None:
    source = create(client)
    large = PAID | {"lines": [f"item-{n:05}" for n in range(20_000)]}  # ~200 KB: over 64 KiB
    resp = stripe_post(client, source["path"], large)
    assert resp.status_code == 200, resp.text
    event = client.get(f"/v1/events/{resp.json()['ids'][0]}").json()["data"]
    assert len(event["data"]["lines"]) == 20_000
    seconds = {"name": "'stripe/' + body.type", "ts": "body.created"}  # seconds, not ms
    changed = STRIPE_SOURCE | {"transform": seconds, "revision": source["revision"]}
    assert client.put("/v1/webhooks/stripe-prod", json=changed).status_code == 200
    refused = stripe_post(client, source["path"], PAID | {"created": 1_700_000_000})
    assert refused.status_code == 422, refused.text
    assert refused.json()["reason"] == "invalid_event" and "1980" in refused.json()["error"]
    assert deliveries(client, "stripe-prod", reason="invalid_event")[0]["replayable"]


def test_a_body_that_is_not_a_map_or_not_json_is_refused_saying_why(client: TestClient) -> None:
    source = create(client, STRIPE_SOURCE | {"transform": {"name": "'stripe/list'"}})
    listed = stripe_post(client, source["path"], [1, 2])
    assert listed.status_code == 422 and "must give a map" in listed.json()["error"]
    body = b"{not json"
    header = stripe.WebhookSignature.generate_signature_header(body.decode(), STRIPE_SECRET)
    headers = {"Stripe-Signature": header, "Content-Type": "application/json"}
    broken = client.post(source["path"], content=body, headers=headers)
    assert broken.status_code == 400 and broken.json()["reason"] == "unreadable_body"


def test_a_stored_source_that_no_longer_passes_the_checks_answers_503(client: TestClient) -> None:
    source = create(client)
    url = client.app.state.platform.settings.database_url  # type: ignore[attr-defined]
    engine = create_engine(url)
    try:
        with engine.begin() as conn:  # as a source saved before a stricter check would be
            broken = "UPDATE webhook_sources SET config = replace(config, 'body.type', 'body.')"
            conn.execute(text(broken))
    finally:
        engine.dispose()
    resp = stripe_post(client, source["path"], PAID)
    assert resp.status_code == 503, resp.text
    assert "no longer pass" in resp.json()["error"] and resp.headers["retry-after"] == "60"


def test_a_delivery_over_a_ui_forms_cap_is_taken_up_to_the_sources_cap(client: TestClient) -> None:
    # /webhooks/ bodies count as event ingest, not as the UI's form posts (1 MiB at most)
    source = create(client, STRIPE_SOURCE | {"max_body_bytes": 3 * 1024 * 1024})
    payload = PAID | {"blob": "x" * (2 * 1024 * 1024)}
    resp = stripe_post(client, source["path"], payload)
    assert resp.status_code == 200, resp.text[:300]


def test_slacks_signed_url_check_is_answered_with_its_challenge(client: TestClient) -> None:
    secret = "slack-signing-secret-2"
    slack = {"name": "slack-events", "scheme": "slack", "secrets": [secret]}
    path = create(client, slack | {"transform": {"name": "'slack/' + body.event.type"}})["path"]
    body = json.dumps({"type": "url_verification", "challenge": "3eZbrw1aBm2rZgRNFdxV"}).encode()
    ts = str(int(time.time()))
    sig = SignatureVerifier(secret).generate_signature(timestamp=ts, body=body)
    assert sig is not None
    headers = {"X-Slack-Signature": sig, "X-Slack-Request-Timestamp": ts}
    resp = client.post(path, content=body, headers=headers | {"Content-Type": "application/json"})
    assert resp.status_code == 200 and resp.json() == {"challenge": "3eZbrw1aBm2rZgRNFdxV"}
    assert store_rows(client, "SELECT count(*) FROM events") == [(0,)]
    (noted,) = deliveries(client, "slack-events")
    assert (noted["status"], noted["event_id"]) == ("accepted", None)
    forged = client.post(path, content=body, headers={"X-Slack-Request-Timestamp": ts})
    assert forged.status_code == 401  # the check is answered only once the signature holds
