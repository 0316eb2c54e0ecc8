"""`weir lanes list|show`: the FIFO lanes of a running Weir through its REST API
(`/v1/lanes`): which are busy, who holds each and since when, how many runs wait.

    weir lanes list --function my-app-pay
    weir lanes show 3f2a... --limit 20
"""

import argparse
import sys
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx
from weir.platform.cli.capacity import NOT_WEIR, TIMEOUT_S, failed, not_weir, print_table
from weir.platform.cli.target import add_target_arguments, target

COLUMNS = ("LANE", "OWNER", "KEY", "HOLDER", "SINCE", "FENCE", "QUEUED", "NEXT")
MEMBER_COLUMNS = ("#", "RUN", "STATUS", "CREATED")


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    helptext = "see the FIFO lanes of a running Weir: holders, fences, runs in line"
    p = sub.add_parser("lanes", help=helptext, description=helptext)
    actions = p.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="busy lanes, with holder, queue length and next run")
    listing.add_argument("--function", help="only the lanes of this function (slug or id)")
    listing.add_argument(
        "--key", help="with --function: only the lane of this key value, if it is busy"
    )
    _paging(listing)
    add_target_arguments(listing)
    showing = actions.add_parser("show", help="one lane and its runs in line, first first")
    showing.add_argument("lane", help="the lane's id (the LANE column of `list`)")
    _paging(showing)
    add_target_arguments(showing)


def _paging(p: argparse.ArgumentParser) -> None:
    p.add_argument("--limit", type=int, default=50, help="rows per page, 1 to 500 (default 50)")
    p.add_argument("--cursor", help="the page to show: the cursor printed under the previous one")


def run(args: argparse.Namespace) -> int:
    base, headers = target(args)
    try:
        with httpx.Client(base_url=base, headers=headers, timeout=TIMEOUT_S) as client:
            if args.action == "list":
                return _list(client, args)
            return _show(client, args)
    except httpx.HTTPError as exc:
        print(f"No Weir answers at {base} ({exc}): pass --base-url.", file=sys.stderr)
        return 1
    except NOT_WEIR as exc:
        return not_weir(base, exc)


def _page(args: argparse.Namespace) -> dict[str, Any]:
    params: dict[str, Any] = {"limit": args.limit}
    if args.cursor:
        params["cursor"] = args.cursor
    return params


def _list(client: httpx.Client, args: argparse.Namespace) -> int:
    params = _page(args)
    if args.function:
        params["function"] = args.function
    if args.key is not None:
        params["key"] = args.key
    resp = client.get("/v1/lanes", params=params)
    if resp.status_code != 200:
        return failed(resp)
    body = resp.json()
    rows = [_lane_row(lane) for lane in body["data"]]
    if not rows and args.key is not None:
        print(f"No busy lane has the key {args.key!r}: no run of it holds or waits in it.")
        return 0
    if not rows:
        print("No busy lane: every lane is free (none holds a run).")
        return 0
    print_table(COLUMNS, rows)
    _more(body)
    return 0


def _show(client: httpx.Client, args: argparse.Namespace) -> int:
    lane = quote(args.lane, safe="")
    resp = client.get(f"/v1/lanes/{lane}")
    if resp.status_code != 200:
        return failed(resp)
    data = resp.json()["data"]
    holder = data["holder"]
    print(f"lane {data['lane']} ({_owner(data)}), key {data['key']!r}")
    if holder is None:
        print(f"free; fence {data['fence']} (the next holder gets a higher one)")
    else:
        since, fence = _when(holder["since"]), holder["fence"]
        print(f"held by run {holder['run_id']} ({holder['status']}) since {since}, fence {fence}")
    print(f"{data['queued']} run(s) in line")
    members = client.get(f"/v1/lanes/{lane}/members", params=_page(args))
    if members.status_code != 200:
        return failed(members)
    body = members.json()
    rows = [
        (str(m["seq"]), m["run_id"], m["status"] or "(deleted)", _when(m["created_at"]))
        for m in body["data"]
    ]
    if rows:
        print_table(MEMBER_COLUMNS, rows)
    _more(body)
    return 0


def _lane_row(lane: dict[str, Any]) -> tuple[str, ...]:
    holder = lane["holder"] or {}
    nxt = lane["oldest_waiting"] or {}
    return (
        lane["lane"],
        _owner(lane),
        _cut(lane["key"]),
        holder.get("run_id", "-"),
        _when(holder.get("since")),
        str(lane["fence"]),
        str(lane["queued"]),
        nxt.get("run_id", "-"),
    )


def _owner(lane: dict[str, Any]) -> str:
    if lane["name"] is not None:
        return f"name {lane['name']}"
    return str(lane["function"] or lane["function_id"] or "(unknown)")


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _cut(text: str, width: int = 40) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _more(body: dict[str, Any]) -> None:
    cursor = body["metadata"].get("next_cursor")
    if cursor:
        print(f"more: pass --cursor {cursor}")
