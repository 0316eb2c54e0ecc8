"""The Webhooks pages: create a source from its JSON, see a delivery its transform refused,
try a sample, fix the transform and replay the delivery into an event."""

import json
import urllib.error
import urllib.request
import uuid

import stripe
from playwright.sync_api import Page, expect

from tests.browser.browser_support import Server, screenshot

SECRET = "whsec_ui_test_0123456789"


def _deliver(server: Server, path: str, payload: dict[str, str]) -> int:
    body = json.dumps(payload)
    header = stripe.WebhookSignature.generate_signature_header(body, SECRET)
    headers = {"Stripe-Signature": header, "Content-Type": "application/json"}
    request = urllib.request.Request(server.url + path, body.encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return int(refused.code)


def test_create_a_source_see_a_refusal_fix_the_transform_and_replay(
    page: Page, server: Server
) -> None:
    name = f"ui-stripe-{uuid.uuid4().hex[:6]}"
    source = {
        "name": name,
        "scheme": "stripe",
        "secrets": [SECRET],
        "transform": {"name": "'stripe/' + body.kind", "id": "body.id"},
    }
    page.goto(server.url + "/webhook-sources")
    page.locator("#webhook-create textarea").fill(json.dumps(source))
    page.get_by_role("button", name="Create").click()
    expect(page.get_by_role("status").first).to_contain_text("give the provider the URL")
    path = page.locator("#webhook-path").inner_text()
    assert path.startswith("/webhooks/wh_")

    assert _deliver(server, path, {"id": "evt_ui", "type": "invoice.paid"}) == 422
    page.reload()
    row = page.locator("#webhook-deliveries tbody tr").first
    expect(row).to_contain_text("refused")
    expect(row).to_contain_text("transform_error")

    page.locator("#webhook-test textarea").fill(json.dumps({"body": {"type": "x"}}))
    page.get_by_role("button", name="Show the event").click()
    expect(page.locator("#webhook-tried")).to_contain_text("transform_error")

    settings = json.loads(page.locator("#webhook-edit textarea").input_value())
    settings["transform"]["name"] = "'stripe/' + body.type"
    page.locator("#webhook-edit textarea").fill(json.dumps(settings))
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status").first).to_contain_text("revision 2")

    page.locator("#webhook-deliveries tbody tr").first.get_by_role("button", name="Replay").click()
    expect(page.get_by_role("status").first).to_contain_text("Replayed: event")
    row = page.locator("#webhook-deliveries tbody tr").first
    expect(row).to_contain_text("replayed")
    expect(row.get_by_role("button", name="Replay")).to_have_count(0)
    screenshot(page, "webhook-source")
    row.get_by_role("link").click()
    expect(page.locator("main")).to_contain_text("stripe/invoice.paid")

    page.goto(server.url + f"/webhook-sources/{name}?status=refused")
    expect(page.locator("#deliveries-none")).to_be_visible()
    page.goto(server.url + "/webhook-sources")
    expect(page.locator("#webhook-sources")).to_contain_text(name)
