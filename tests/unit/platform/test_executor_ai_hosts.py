"""Which addresses step.ai.infer may connect to (executor/ai_hosts.py): public ones only in
`weir start` without --allowed-ai-hosts, whatever form an address takes."""

import ipaddress

import pytest
from weir.platform.executor import ai_hosts

START = ai_hosts.policy((), dev=False)


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.1.2.3",
        "::1",
        "::ffff:127.0.0.1",  # IPv4-mapped
        "::ffff:10.0.0.1",
        "2002:7f00:1::1",  # 6to4 carrying 127.0.0.1
        "2001:0:4136:e378:8000:63bf:80ff:fffe",  # Teredo carrying 127.0.0.1
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",  # cloud metadata
        "fe80::1",
        "fc00::1",
        "100.64.0.1",  # shared address space (CGNAT)
        "0.0.0.0",
        "::",
        "224.0.0.1",
        "ff02::1",
    ],
)
def test_start_refuses_every_non_public_address(address: str) -> None:
    problem = ai_hosts.address_problem(START, ipaddress.ip_address(address))
    assert problem is not None and "--allowed-ai-hosts" in problem


@pytest.mark.parametrize("address", ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"])
def test_start_allows_a_public_address(address: str) -> None:
    assert ai_hosts.address_problem(START, ipaddress.ip_address(address)) is None


def test_dev_allows_anything_and_a_listed_network_only_its_own() -> None:
    dev = ai_hosts.policy((), dev=True)
    assert ai_hosts.address_problem(dev, ipaddress.ip_address("127.0.0.1")) is None
    listed = ai_hosts.policy(("10.0.0.0/8",), dev=True)  # the flag limits dev mode too
    assert ai_hosts.address_problem(listed, ipaddress.ip_address("10.9.9.9")) is None
    assert ai_hosts.address_problem(listed, ipaddress.ip_address("::ffff:10.9.9.9")) is None
    assert ai_hosts.address_problem(listed, ipaddress.ip_address("8.8.8.8")) is not None


def test_a_named_host_is_called_wherever_it_resolves_and_others_are_refused_by_name() -> None:
    rule = ai_hosts.policy(("llm.internal", "*.models.example", "proxy:8080"), dev=False)
    assert ai_hosts.url_problem(rule, "http://llm.internal/v1") == (None, False)
    assert ai_hosts.url_problem(rule, "https://a.models.example/v1") == (None, False)
    assert ai_hosts.url_problem(rule, "http://proxy:8080/v1") == (None, False)
    problem, _ = ai_hosts.url_problem(rule, "http://proxy:9090/v1")
    assert problem is not None and "does not allow" in problem
    problem, _ = ai_hosts.url_problem(rule, "http://127.0.0.1/v1")
    assert problem is not None and "llm.internal" in problem
    # without the flag, any name is let through to the guarded client, which checks addresses
    assert ai_hosts.url_problem(START, "https://api.example/v1") == (None, True)


@pytest.mark.parametrize("entry", ["http://x", "10.0.0.0/33", "a b", "host:port"])
def test_an_entry_that_is_neither_host_nor_network_is_refused(entry: str) -> None:
    with pytest.raises(ValueError, match="--allowed-ai-hosts entry"):
        ai_hosts.policy((entry,), dev=False)
