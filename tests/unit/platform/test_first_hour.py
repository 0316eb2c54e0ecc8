"""Small pure parts of the first-hour CLI work: sync backoff and the banner's database line."""

from itertools import islice

from weir.platform.cli.banner import shown_database
from weir.platform.executor.sync_request import retry_delays


def test_sync_retries_double_up_to_a_cap() -> None:
    assert list(islice(retry_delays(), 8)) == [0.5, 1, 2, 4, 8, 16, 30, 30]


def test_the_banner_hides_a_database_password() -> None:
    shown = shown_database("postgresql+psycopg://weir:s3cret@db.internal:5432/weir")
    assert shown == "postgresql+psycopg://weir:***@db.internal:5432/weir"


def test_the_banner_shows_where_a_relative_sqlite_file_is() -> None:
    assert shown_database("sqlite:///.weir/weir.db").startswith("sqlite:////")
    assert shown_database("sqlite:///:memory:") == "sqlite:///:memory:"
