"""`weir sync APP_URL`: add an app to a running Weir (or sync it again), through its REST API
(`POST /v1/apps`), as its Apps page does.

The running Weir does the sync itself (it PUTs the app, which registers back), so the app is
synced with that Weir's settings and a failure shows on its Apps page too.
"""

import argparse
import sys

import httpx
from weir.platform.cli.target import LOGIN_HINT, add_target_arguments, target

TIMEOUT_S = 60.0  # the app may take a while to answer its sync


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    helptext = "add an app to a running Weir, or sync it again after a change"
    p = sub.add_parser("sync", help=helptext, description=helptext)
    p.add_argument(
        "app_url", nargs="+", help="the app's serve URL, e.g. http://127.0.0.1:8001/api/inngest"
    )
    add_target_arguments(p)


def run(args: argparse.Namespace) -> int:
    base, headers = target(args)
    failed = 0
    with httpx.Client(base_url=base, headers=headers, timeout=TIMEOUT_S) as client:
        for url in args.app_url:
            ok, text = _sync(client, base, url)
            print(text, file=sys.stdout if ok else sys.stderr)
            failed += not ok
    return 1 if failed else 0


def _sync(client: httpx.Client, base: str, url: str) -> tuple[bool, str]:
    try:
        resp = client.post("/v1/apps", json={"url": url})
    except httpx.HTTPError as exc:
        return (
            False,
            f"No Weir answers at {base} ({exc}): start one with `weir dev`, or pass --base-url.",
        )
    if resp.status_code == 401:
        return False, f"The Weir at {base} wants a login: {LOGIN_HINT}."
    if resp.status_code == 200:
        app = resp.json()["data"].get("app")
        return True, f"Synced {url}{f' (app {app})' if app else ''}. See {base}/apps."
    try:
        error = resp.json().get("error") or resp.text[:300]
    except ValueError:
        error = resp.text[:300]
    if resp.status_code in (400, 409):
        return False, f"Sync of {url} failed: {error.removeprefix(f'the sync of {url} failed: ')}"
    return False, f"The Weir at {base} answered HTTP {resp.status_code}: {error}"
