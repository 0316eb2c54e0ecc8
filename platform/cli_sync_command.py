"""`weir sync APP_URL`: add an app to a running Weir (or sync it again), as its Apps page does.

The running Weir does the sync itself (it PUTs the app, which registers back), so the app is
synced with that Weir's settings and a failure shows on its Apps page too.
"""

import argparse
import os
import sys
from urllib.parse import parse_qs, urlsplit

import httpx

DEFAULT_BASE_URL = "http://127.0.0.1:8288"
TIMEOUT_S = 60.0  # the app may take a while to answer its sync


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    helptext = "add an app to a running Weir, or sync it again after a change"
    p = sub.add_parser("sync", help=helptext, description=helptext)
    p.add_argument(
        "app_url", nargs="+", help="the app's serve URL, e.g. http://127.0.0.1:8001/api/inngest"
    )
    p.add_argument(
        "--base-url",
        default=os.environ.get("WEIR_BASE_URL") or DEFAULT_BASE_URL,
        help=f"the running Weir [WEIR_BASE_URL] (default: {DEFAULT_BASE_URL})",
    )
    p.add_argument(
        "--admin-token",
        default=os.environ.get("WEIR_ADMIN_TOKEN"),
        help="the Weir's admin token when it runs `weir start` [WEIR_ADMIN_TOKEN]",
    )


def run(args: argparse.Namespace) -> int:
    base = str(args.base_url).rstrip("/")
    headers = {"authorization": f"Bearer {args.admin_token}"} if args.admin_token else {}
    failed = 0
    with httpx.Client(base_url=base, headers=headers, timeout=TIMEOUT_S) as client:
        for url in args.app_url:
            ok, text = _sync(client, base, url)
            print(text, file=sys.stdout if ok else sys.stderr)
            failed += not ok
    return 1 if failed else 0


def _sync(client: httpx.Client, base: str, url: str) -> tuple[bool, str]:
    try:
        resp = client.post("/apps/sync", data={"url": url})
    except httpx.HTTPError as exc:
        return (
            False,
            f"No Weir answers at {base} ({exc}): start one with `weir dev`, or pass --base-url.",
        )
    location = urlsplit(resp.headers.get("location", ""))
    if resp.status_code == 401 or location.path == "/login":
        return False, f"The Weir at {base} wants a login: pass --admin-token (or WEIR_ADMIN_TOKEN)."
    note = parse_qs(location.query)
    if resp.status_code == 303 and "flash" in note:
        return True, f"{note['flash'][0]} See {base}/apps."
    if resp.status_code == 303 and "problem" in note:
        return False, note["problem"][0]
    return False, f"The Weir at {base} answered HTTP {resp.status_code}: {resp.text[:300]}"
