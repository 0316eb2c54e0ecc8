"""`weir start`'s auth settings: flags and WEIR_* variables, and the pairs that must agree."""

import pytest
from weir.platform.cli import main as cli


def settings(argv: list[str]) -> cli.Settings:
    return cli.settings_from(cli._parser().parse_args(argv))


def test_auth_flags_reach_the_settings() -> None:
    hosts = ["--allowed-app-hosts", "a", "--allowed-app-hosts", "b"]
    s = settings(["start", "--admin-token", "t", *hosts, "--app-timeout", "5"])
    assert (s.admin_token, s.allowed_app_hosts, s.app_timeout_s) == ("t", ("a", "b"), 5.0)
    assert settings(["start"]).app_timeout_s == 7200.0  # Inngest's two hours


def test_auth_variables_reach_the_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEIR_ADMIN_USER", "ops")
    monkeypatch.setenv("WEIR_ADMIN_PASSWORD", "pw")
    monkeypatch.setenv("WEIR_ALLOWED_APP_HOSTS", "x.internal,*.apps")
    s = settings(["start"])
    assert (s.admin_user, s.admin_password) == ("ops", "pw")
    assert s.allowed_app_hosts == ("x.internal", "*.apps")


def test_repeated_flags_replace_their_variable_not_add_to_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEIR_SIGNING_KEYS", "old-key")
    monkeypatch.setenv("WEIR_SDK_URLS", "http://a/api/inngest,http://b/api/inngest")
    monkeypatch.setenv("WEIR_ALLOWED_HOSTS", "weir.internal")
    s = settings(["start", "--signing-key", "new-key", "--signing-key", "next-key", "-u", "u"])
    assert s.signing_keys == ("new-key", "next-key")  # the old key no longer signs
    assert s.signing_key == "new-key"
    assert s.app_urls == ("u",)
    assert s.allowed_hosts == ("weir.internal",)  # no flag: the variable stands
    s = settings(["start"])
    assert s.signing_keys == ("old-key",)
    assert s.app_urls == ("http://a/api/inngest", "http://b/api/inngest")


# secrets strong enough for weir start (security/strength.py)
EVENT_KEY = "5f0c2a9e8b7d41c3a6e2f9b8d7c4a1e0"
SIGNING_KEY = "signkey-prod-" + "8c1f4e2a9b7d6c3e5a0f1b2c3d4e5f60" * 2
TOKEN = "Zq8vN2kLw5RtY7uPx3sA9dFg"
KEYS = ["--event-key", EVENT_KEY, "--signing-key", SIGNING_KEY]


def test_a_user_without_a_password_is_refused() -> None:
    s = settings(["start", *KEYS, "--admin-user", "ops"])
    assert any("--admin-password" in p for p in cli._start_problems(s))


def test_start_without_an_admin_login_is_refused_naming_the_flags() -> None:
    s = settings(["start", *KEYS])
    (problem,) = cli._start_problems(s)
    assert "--admin-token" in problem
    assert "--admin-user" in problem
    assert cli._start_problems(settings(["start", *KEYS, "--admin-token", TOKEN])) == []


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [
        ("--event-key", "e", "an --event-key"),
        ("--event-key", "test", "an --event-key"),
        ("--event-key", "ab" * 32, "an --event-key"),  # one piece repeated
        ("--signing-key", "signkey-prod-" + "4a" * 32, "a --signing-key"),
        ("--signing-key", "signkey-prod-0123456789abcdef", "a --signing-key"),  # 64 bits
        ("--admin-token", "admin", "--admin-token"),
    ],
)
def test_weak_secrets_are_refused_at_start_saying_what_is_required(
    flag: str, value: str, named: str
) -> None:
    argv = ["start", "--event-key", EVENT_KEY, "--signing-key", SIGNING_KEY]
    argv += ["--admin-token", TOKEN, flag, value]
    (problem,) = cli._start_problems(settings(argv))
    assert problem.startswith(f"{named} is too weak") and "at least 128 bits" in problem


@pytest.mark.parametrize("password", ["x", "hunter2", "password1234", "aaaaaaaaaaaaaaaaaaaa"])
def test_a_weak_admin_password_is_refused(password: str) -> None:
    argv = ["start", *KEYS, "--admin-user", "ops", "--admin-password", password]
    (problem,) = cli._start_problems(settings(argv))
    assert "--admin-password is too weak" in problem and "at least 64 bits" in problem


def test_strong_secrets_pass() -> None:
    argv = [
        "start",
        *KEYS,
        "--admin-user",
        "ops",
        "--admin-password",
        "correct horse battery staple",
    ]
    assert cli._start_problems(settings([*argv, "--event-key", "Xk3mP9qR2sT7vW4yZ8bN5cL1"])) == []


def test_a_comma_list_in_one_host_flag_is_several_hosts() -> None:
    s = settings(
        [
            "start",
            "--allowed-app-hosts",
            "a.internal, b.internal",
            "--allowed-app-hosts",
            "c:80",
            "--allowed-ai-hosts",
            "llm.internal,10.0.0.0/8",
            "--allowed-hosts",
            "weir.example,*.example",
        ]
    )
    assert s.allowed_app_hosts == ("a.internal", "b.internal", "c:80")
    assert s.allowed_ai_hosts == ("llm.internal", "10.0.0.0/8")
    assert s.allowed_hosts == ("weir.example", "*.example")


def test_a_bad_allowed_ai_hosts_entry_is_refused_at_start_naming_it() -> None:
    problem = cli._ai_hosts_problem(settings(["start", "--allowed-ai-hosts", "http://llm"]))
    assert problem is not None and "'http://llm'" in problem
    assert cli._ai_hosts_problem(settings(["dev", "--allowed-ai-hosts", "llm,10.0.0.0/8"])) is None
