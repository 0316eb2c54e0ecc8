"""Where step.ai.infer may send its model requests (`--allowed-ai-hosts`).

An app chooses the URL, and Weir sends the request and gives the answer back to the app: without
a rule, any app could read Weir's own network (a database's HTTP port, a cloud metadata
service, an admin page on loopback). So:
- without the flag, `weir start` connects only to public addresses: never loopback, private,
  link-local, shared (CGNAT), multicast or reserved ones, IPv4-mapped and 6to4/Teredo IPv6
  forms included; `weir dev` connects anywhere (the banner says so);
- with it, only what it lists: a host name (`host`, `host:port`, `*.domain`), called wherever
  it resolves (the operator vouches for it: a model proxy on loopback, say), or an address or
  network (`10.1.2.3`, `10.0.0.0/8`, `fd00::/8`), which the host's addresses must fall in.
The address rule is checked against the address each connection is actually made to, after
DNS resolution (`guard`, the HTTP client's socket factory): a name that resolves to a public
address when checked and to loopback when connected cannot slip past.
"""

import errno
import ipaddress
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from weir.platform.executor import app_hosts
from weir.platform.foundation.record_type import record

FLAG = "--allowed-ai-hosts"
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network
SocketFactory = Callable[[tuple[Any, ...]], socket.socket]


@record
class AIPolicy:
    names: tuple[str, ...] = ()  # host entries: called wherever they resolve
    networks: tuple[Network, ...] = ()  # the addresses a host not named may resolve to
    listed: bool = False  # the flag was given: nothing it does not list is called
    anywhere: bool = False  # weir dev without the flag: any address


class RefusedAddress(OSError):
    """A connection the policy does not allow; its message says why and what to change."""

    def __init__(self, message: str) -> None:
        super().__init__(errno.EACCES, message)


def policy(entries: tuple[str, ...], *, dev: bool) -> AIPolicy:
    """The policy of the flag's entries; ValueError naming an entry that is neither a host
    nor an address or network."""
    names: list[str] = []
    networks: list[Network] = []
    for raw in entries:
        entry = raw.strip().lower()
        network = _network(entry)
        if network is not None:
            networks.append(network)
        elif _host_entry(entry):
            names.append(entry)
        else:
            raise ValueError(
                f"{FLAG} entry {raw!r} is neither a host (host, host:port, *.domain) nor an "
                "IP address or network (10.0.0.0/8, fd00::/8)"
            )
    listed = bool(entries)
    return AIPolicy(tuple(names), tuple(networks), listed, anywhere=dev and not listed)


def describe(rule: AIPolicy) -> str:
    """The start banner's line: what step.ai.infer may call."""
    if rule.anywhere:
        return f"any host, loopback and private addresses included (weir dev; {FLAG} limits it)"
    if not rule.listed:
        return f"public addresses only: no loopback, private or link-local ({FLAG} allows more)"
    return f"only {_listed(rule)} ({FLAG})"


def url_problem(rule: AIPolicy, url: str) -> tuple[str | None, bool]:
    """(what is wrong with calling `url`, or None; whether its connections must be guarded)."""
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower()
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return f"the AI URL {url!r} is not a valid URL", False
    if any(app_hosts.matches(entry, host, port) for entry in rule.names):
        return None, False  # named by the operator: wherever it resolves
    if rule.anywhere:
        return None, False
    literal = _address(host)
    if literal is not None:
        return address_problem(rule, literal), True
    if rule.listed and not rule.networks:
        return (
            f"the AI URL {url!r} is on host {host!r}, which {FLAG} does not allow (allowed: "
            f"{_listed(rule)}); add the host there to call this AI URL"
        ), False
    return None, True


def address_problem(rule: AIPolicy, address: Address) -> str | None:
    """None if a connection to `address` is allowed for a host the operator did not name."""
    address = _unwrapped(address)
    if rule.anywhere or any(address in network for network in rule.networks):
        return None
    if rule.listed:
        return (
            f"step.ai.infer may not connect to {address}: {FLAG} allows only "
            f"{_listed(rule)}; add the host or its network there to call it"
        )
    if _public(address):
        return None
    return (
        f"step.ai.infer may not connect to {address}, a {_kind(address)} address: weir start "
        f"calls only public addresses for model requests unless {FLAG} lists the host or "
        "network"
    )


def guard(rule: AIPolicy) -> SocketFactory:
    """A socket factory for the HTTP client that refuses every connection to an address the
    policy does not allow (it sees the resolved address of each connection attempt)."""

    def make(addr_info: tuple[Any, ...]) -> socket.socket:
        family, kind, proto, _, sockaddr = addr_info
        address = _address(str(sockaddr[0]))
        problem = (
            address_problem(rule, address)
            if address is not None
            else f"step.ai.infer may not connect to {sockaddr[0]!r}: not an IP address"
        )
        if problem is not None:
            raise RefusedAddress(problem)
        return socket.socket(family=family, type=kind, proto=proto)

    return make


def refusal_in(exc: BaseException) -> str | None:
    """The policy's sentence if `exc` (or what caused it) is a refused connection."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, RefusedAddress):
            return str(seen.strerror)
        inner = getattr(seen, "os_error", None)  # aiohttp's ClientConnectorError
        if isinstance(inner, RefusedAddress):
            return str(inner.strerror)
        if isinstance(inner, OSError) and "step.ai.infer may not connect" in str(inner):
            return str(inner.strerror or inner)  # several addresses, each refused
        seen = seen.__cause__
    return None


def _listed(rule: AIPolicy) -> str:
    return ", ".join([*rule.names, *(str(n) for n in rule.networks)])


def _public(address: Address) -> bool:
    return address.is_global and not address.is_multicast


def _kind(address: Address) -> str:
    if address.is_loopback:
        return "loopback"
    if address.is_link_local:
        return "link-local"
    if address.is_multicast:
        return "multicast"
    if address.is_private:
        return "private"
    return "non-public"


def _unwrapped(address: Address) -> Address:
    """The IPv4 address an IPv6 form carries (::ffff:a.b.c.d, 6to4, Teredo), else itself."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return address.ipv4_mapped
        if address.sixtofour is not None:
            return address.sixtofour
        if address.teredo is not None:
            return address.teredo[1]
    return address


def _address(text: str) -> Address | None:
    try:
        return ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _network(entry: str) -> Network | None:
    try:
        return ipaddress.ip_network(entry.strip("[]"), strict=False)
    except ValueError:
        return None


def _host_entry(entry: str) -> bool:
    name = entry[2:] if entry.startswith("*.") else entry
    host, _, port = name.rpartition(":") if name.count(":") == 1 else (name, "", "")
    if port and not port.isdigit():
        return False
    return bool(host) and all(c.isalnum() or c in "-._" for c in host)
