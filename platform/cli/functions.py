"""`weir functions list|show|pause|resume`: see and pause the functions of a running Weir
through its REST API (`/v1/functions`), as an operator does during an incident.

    weir functions list
    weir functions pause my-app-charge --mode hold
    weir functions pause my-app-charge --mode skip --in-progress cancel
    weir functions resume my-app-charge
"""

import argparse
import getpass
import os
import sys
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx
from weir.platform.cli.capacity import NOT_WEIR, TIMEOUT_S, failed, not_weir, print_table
from weir.platform.cli.target import add_target_arguments, target

COLUMNS = ("FUNCTION", "PAUSED", "SINCE", "BY")
MODES = ("skip", "hold")
IN_PROGRESS = ("pause", "cancel")


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    helptext = "see, pause and resume the functions of a running Weir"
    p = sub.add_parser("functions", help=helptext, description=helptext)
    actions = p.add_subparsers(dest="action", required=True)
    add_target_arguments(actions.add_parser("list", help="every function, paused or not"))
    showing = actions.add_parser("show", help="one function's paused state and its audit")
    showing.add_argument("function", help="the function's slug (as `list` shows it) or id")
    add_target_arguments(showing)
    pausing = actions.add_parser("pause", help="pause a function in every process")
    pausing.add_argument("function", help="the function's slug (as `list` shows it) or id")
    pausing.add_argument(
        "--mode",
        choices=MODES,
        default="skip",
        help="skip (default, as Inngest): its events are stored, marked skipped, and start "
        "no run; hold: its runs are created and wait until it resumes",
    )
    pausing.add_argument(
        "--in-progress",
        choices=IN_PROGRESS,
        default="pause",
        help="the runs under way: pause (default) waits at their next step; cancel ends them now",
    )
    _actor(pausing)
    resuming = actions.add_parser("resume", help="resume a paused function")
    resuming.add_argument("function", help="the function's slug (as `list` shows it) or id")
    _actor(resuming)


def _actor(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--actor",
        default=None,
        help="who makes the change, recorded with it [WEIR_ACTOR] (default: your login name)",
    )
    add_target_arguments(p)


def run(args: argparse.Namespace) -> int:
    base, headers = target(args)
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=TIMEOUT_S) as client:
            if args.action == "list":
                return _list(client)
            if args.action == "show":
                return _show(client, args.function)
            return _change(client, args)
    except httpx.HTTPError as exc:
        print(f"No Weir answers at {base} ({exc}): pass --base-url.", file=sys.stderr)
        return 1
    except NOT_WEIR as exc:
        return not_weir(base, exc)


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="seconds")


def _list(client: httpx.Client) -> int:
    resp = client.get("/v1/functions")
    if resp.status_code != 200:
        return failed(resp)
    rows = [_row(fn) for fn in resp.json()["data"]]
    if not rows:
        print("No function yet: sync an app first (`weir sync URL`).")
        return 0
    print_table(COLUMNS, rows)
    return 0


def _row(fn: dict[str, Any]) -> tuple[str, ...]:
    pause = fn["pause"]
    if pause is None:
        return (fn["slug"], "-", "-", "-")
    how = f"paused ({pause['mode']})"
    return (fn["slug"], how, _when(pause["paused_at"]), pause["paused_by"])


def _show(client: httpx.Client, function: str) -> int:
    resp = client.get(f"/v1/functions/{quote(function, safe='')}")
    if resp.status_code != 200:
        return failed(resp)
    fn = resp.json()["data"]
    print(_state(fn["slug"], fn["pause"]))
    for change in fn["pause_changes"]:
        print("  " + _change_line(change))
    return 0


def _change_line(change: dict[str, Any]) -> str:
    how = f" ({change['mode']}, runs under way: {change['in_progress']})" if change["mode"] else ""
    runs = change["runs_cancelled"]
    cancelled = f"; {runs} runs cancelled" if runs else ""
    return f"{_when(change['at'])}  {change['action']}{how} by {change['actor']}{cancelled}"


def _state(slug: str, pause: dict[str, Any] | None) -> str:
    if pause is None:
        return f"{slug}: not paused"
    return (
        f"{slug}: paused ({pause['mode']}, runs under way: {pause['in_progress']}) since "
        f"{_when(pause['paused_at'])} by {pause['paused_by']}"
    )


def _change(client: httpx.Client, args: argparse.Namespace) -> int:
    body: dict[str, Any] = {}
    actor = args.actor or _env_actor()
    if actor:
        body["actor"] = actor
    if args.action == "pause":
        body |= {"mode": args.mode, "in_progress": args.in_progress}
    resp = client.post(f"/v1/functions/{quote(args.function, safe='')}/{args.action}", json=body)
    if resp.status_code != 200:
        return failed(resp)
    done = resp.json()["data"]
    cancelled = f"; {done['runs_cancelled']} runs cancelled" if done["runs_cancelled"] else ""
    print(_state(done["slug"], done["pause"]) + cancelled)
    return 0


def _env_actor() -> str | None:
    if os.environ.get("WEIR_ACTOR"):
        return os.environ["WEIR_ACTOR"]
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name for this uid (e.g. in a container)
        return None
