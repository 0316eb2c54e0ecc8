"""`weir webhooks ...`: webhook sources of a running Weir through its REST API
(`/v1/webhooks`), including a declarative file applied by name.

    weir webhooks list
    weir webhooks apply webhooks.json          # {"webhooks": [{...}, ...]}

A secret written "${NAME}" in the file is read from the environment variable NAME by `apply`,
so the file can be kept with the code while the secrets stay in the deployment's environment.
    weir webhooks test stripe-prod sample.json # {"body": {...}, "headers": {...}}
    weir webhooks deliveries stripe-prod --status refused
    weir webhooks replay stripe-prod 01J...
    weir webhooks delete stripe-prod
"""

import argparse
import json
import os
import re
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
from weir.platform.cli.capacity import NOT_WEIR, TIMEOUT_S, failed, not_weir
from weir.platform.cli.target import add_target_arguments, target

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    helptext = "list, apply and inspect webhook sources of a running Weir"
    p = sub.add_parser("webhooks", help=helptext, description=helptext)
    actions = p.add_subparsers(dest="action", required=True)
    add_target_arguments(actions.add_parser("list", help="every source and its URL path"))
    applying = actions.add_parser("apply", help="create or change the sources a file declares")
    applying.add_argument("file", type=Path, help='JSON: {"webhooks": [source, ...]}')
    add_target_arguments(applying)
    testing = actions.add_parser("test", help="the event a sample delivery would become")
    testing.add_argument("name")
    testing.add_argument("sample", type=Path, help='JSON: {"body": ..., "headers": {...}}')
    add_target_arguments(testing)
    listing = actions.add_parser("deliveries", help="a source's newest deliveries")
    listing.add_argument("name")
    listing.add_argument("--status", choices=["accepted", "refused", "replayed"])
    listing.add_argument("--reason", help="e.g. bad_signature, transform_error")
    listing.add_argument("--limit", type=int, default=50)
    add_target_arguments(listing)
    replaying = actions.add_parser("replay", help="a delivery its transform refused, again")
    replaying.add_argument("name")
    replaying.add_argument("delivery")
    add_target_arguments(replaying)
    deleting = actions.add_parser("delete", help="a source and its deliveries")
    deleting.add_argument("name")
    add_target_arguments(deleting)


def run(args: argparse.Namespace) -> int:
    base, headers = target(args)
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=TIMEOUT_S) as client:
            return _run(client, args)
    except httpx.HTTPError as exc:
        print(f"No Weir answers at {base} ({exc}): pass --base-url.", file=sys.stderr)
        return 1
    except NOT_WEIR as exc:
        return not_weir(base, exc)


def _file(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"{path}: {exc}") from None


def _with_secrets(declared: Any) -> Any:
    """The file with each "${NAME}" secret replaced by the environment variable NAME."""
    for source in declared.get("webhooks", []) if isinstance(declared, dict) else []:
        secrets = source.get("secrets") if isinstance(source, dict) else None
        if isinstance(secrets, list):
            source["secrets"] = [_secret(s) for s in secrets]
    return declared


def _secret(value: Any) -> Any:
    match = _VARIABLE.fullmatch(value) if isinstance(value, str) else None
    if match is None:
        return value
    found = os.environ.get(match.group(1))
    if not found:
        raise SystemExit(f"the secret ${{{match.group(1)}}} is not set in the environment")
    return found


def _run(client: httpx.Client, args: argparse.Namespace) -> int:
    if args.action == "list":
        resp = client.get("/v1/webhooks")
        if resp.status_code != 200:
            return failed(resp)
        for source in resp.json()["data"]:
            print(f"{source['name']}  {source['scheme']}  {source['path']}")
        return 0
    if args.action == "apply":
        resp = client.post("/v1/webhooks/apply", json=_with_secrets(_file(args.file)))
        if resp.status_code != 200:
            for problem in _problems(resp):
                print(problem, file=sys.stderr)
            return failed(resp)
        for source in resp.json()["data"]:
            print(f"{source['action']}: {source['name']}  {source['path']}")
        return 0
    name = quote(args.name, safe="")
    if args.action == "test":
        resp = client.post(f"/v1/webhooks/{name}/test", json={"sample": _file(args.sample)})
    elif args.action == "deliveries":
        query = {k: v for k in ("status", "reason", "limit") if (v := getattr(args, k))}
        resp = client.get(f"/v1/webhooks/{name}/deliveries", params=query)
        if resp.status_code == 200:
            for d in resp.json()["data"]:
                why = d["reason"] or d["event_id"]
                print(f"{d['id']}  {d['status']}  {why}  {d['message'] or ''}".rstrip())
            return 0
    elif args.action == "replay":
        resp = client.post(f"/v1/webhooks/{name}/deliveries/{quote(args.delivery)}/replay")
    else:
        resp = client.delete(f"/v1/webhooks/{name}")
    if resp.status_code != 200:
        return failed(resp)
    print(json.dumps(resp.json(), indent=2))
    return 0


def _problems(resp: httpx.Response) -> list[str]:
    try:
        found = resp.json().get("problems") or []
    except ValueError:
        return []
    return [str(p) for p in found]
