"""Identifiers: ULIDs sort by creation time, which the queue and the UI rely on."""

from ulid import ULID


def new_id(now_ms: int) -> str:
    return str(ULID.from_timestamp(now_ms / 1000))


def id_time_ms(ulid_text: str) -> int:
    return int(ULID.from_str(ulid_text).milliseconds)
