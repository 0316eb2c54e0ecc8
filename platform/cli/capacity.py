"""`weir capacity list|set|reset`: read and change live capacities of a running Weir through
its REST API (`/v1/capacity`), as an operator does during an incident.

    weir capacity list
    weir capacity set "scope stripe" 5 --revision 3
    weir capacity reset "scope stripe" --revision 4
"""

import argparse
import getpass
import os
import sys
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx
from weir.platform.cli.target import LOGIN_HINT, add_target_arguments, target

TIMEOUT_S = 30.0
COLUMNS = ("NAME", "CAPACITY", "DECLARED", "DRIFT", "REVISION", "UPDATED BY")


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    helptext = "list and change live capacities (concurrency slots, rate meters) of a running Weir"
    p = sub.add_parser("capacity", help=helptext, description=helptext)
    actions = p.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="every capacity, its declared value and drift")
    _common(listing)
    setting = actions.add_parser("set", help="set a live capacity (lowering revokes nothing)")
    setting.add_argument("name", help="the capacity's name (as `list` shows it) or id")
    setting.add_argument("capacity", type=int, help="the new number of slots, at least 1")
    _revision(setting)
    _common(setting)
    resetting = actions.add_parser("reset", help="set a capacity back to the declared value")
    resetting.add_argument("name", help="the capacity's name (as `list` shows it) or id")
    _revision(resetting)
    _common(resetting)


def _revision(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--revision",
        type=int,
        required=True,
        help="the revision `list` showed: the change applies only if nobody changed it since",
    )
    p.add_argument(
        "--actor",
        default=os.environ.get("WEIR_ACTOR") or _user(),
        help="who makes the change, recorded with it [WEIR_ACTOR] (default: your login name)",
    )


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (e.g. in a container)
        return None


def _common(p: argparse.ArgumentParser) -> None:
    add_target_arguments(p)


def run(args: argparse.Namespace) -> int:
    base, headers = target(args)
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=TIMEOUT_S) as client:
            if args.action == "list":
                return _list(client)
            return _change(client, args)
    except httpx.HTTPError as exc:
        print(f"No Weir answers at {base} ({exc}): pass --base-url.", file=sys.stderr)
        return 1
    except NOT_WEIR as exc:
        return not_weir(base, exc)


# What reading an answer of another shape raises: JSON that is not JSON, a missing field, a
# list or text where Weir sends an object
NOT_WEIR = (ValueError, KeyError, TypeError, AttributeError, IndexError)


def not_weir(base: str, exc: Exception) -> int:
    """Say that the server at `base` answered, but not as Weir does (shared by `weir lanes`)."""
    why = f"{type(exc).__name__}: {exc}"[:200]
    print(
        f"The server at {base} answered, but not as Weir does ({why}): is --base-url "
        "(or WEIR_BASE_URL) the address of a Weir?",
        file=sys.stderr,
    )
    return 1


def _list(client: httpx.Client) -> int:
    resp = client.get("/v1/capacity")
    if resp.status_code != 200:
        return failed(resp)
    rows = [_row(c) for c in resp.json()["data"]]
    if not rows:
        print("No capacity yet: they are created when an app declares its limits.")
        return 0
    print_table(COLUMNS, rows)
    return 0


def _row(cap: dict[str, Any]) -> tuple[str, ...]:
    drift = f"code declares {cap['declared']}" if cap["drift"] else "-"
    return (
        cap["name"],
        str(cap["capacity"]),
        str(cap["declared"]),
        drift,
        str(cap["revision"]),
        cap["updated_by"] or "(code)",
    )


def _change(client: httpx.Client, args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"revision": args.revision}
    if args.actor:
        body["actor"] = args.actor
    if args.action == "set":
        body["capacity"] = args.capacity
    resp = client.post(f"/v1/capacity/{quote(args.name, safe='')}/{args.action}", json=body)
    if resp.status_code != 200:
        return failed(resp)
    cap = resp.json()["data"]
    drift = f"; the code declares {cap['declared']} (drift)" if cap["drift"] else ""
    print(f"{cap['name']}: capacity {cap['capacity']}, revision {cap['revision']}{drift}")
    return 0


def failed(resp: httpx.Response) -> int:
    """Say why the API refused (shared by `weir lanes`)."""
    if resp.status_code == 401:
        print(f"This Weir wants a login: {LOGIN_HINT}.", file=sys.stderr)
        return 1
    try:
        body = resp.json()
        error = body.get("error", resp.text) if isinstance(body, dict) else resp.text[:300]
    except ValueError:
        error = resp.text[:300]
    print(f"HTTP {resp.status_code}: {error}", file=sys.stderr)
    return 1


def print_table(columns: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
    """Rows under their column names, each column as wide as its widest cell."""
    widths = [max(len(r[i]) for r in [columns, *rows]) for i in range(len(columns))]
    for row in [columns, *rows]:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
