"""The Python API's entry and clock arguments: ``connect`` picks the client by scheme; a wrong clock type is a
ValueError naming the argument (remote and local Client)."""

from __future__ import annotations

import socket
from datetime import UTC, date, datetime

import pytest
from diachron.retrieval.arguments import clock_argument
from diachron.retrieval.remote import RemoteClient, ServiceError
from diachron.schemas.errors import ConfigError

import diachron
from diachron import Client, connect
from diachron import RemoteClient as ExportedRemoteClient


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"now": "garbage"}, "now"), ({"as_of": "garbage"}, "as_of"), ({"now": 1700000000}, "now")],
)
def test_remote_search_refuses_a_clock_that_is_no_datetime_before_any_request(kwargs, name):
    client = connect(
        f"http://127.0.0.1:{_closed_port()}"
    )  # nothing listens: a request would be a ServiceError
    assert isinstance(client, RemoteClient)
    with pytest.raises(ConfigError) as caught:
        client.search("How did IBM do in 2011?", **kwargs)
    assert isinstance(caught.value, ValueError)
    assert str(caught.value).startswith(f"{name} must be a datetime") and "\n" not in str(caught.value)


def test_remote_parse_refuses_a_string_clock():
    with pytest.raises(ConfigError, match=r"^now must be a datetime .*got str 'yesterday'"):
        RemoteClient(f"http://127.0.0.1:{_closed_port()}").parse("What happened yesterday?", now="yesterday")


def test_a_real_clock_still_reaches_the_wire():
    """A valid datetime passes the check: with no service the call is a ServiceError, not a ConfigError."""
    url = f"http://127.0.0.1:{_closed_port()}"
    with pytest.raises(ServiceError) as caught:
        connect(url).search("x", now=datetime(2026, 1, 1, tzinfo=UTC))
    assert caught.value.status is None and caught.value.uri == url and caught.value.transient
    assert isinstance(caught.value, diachron.RetrievalError) and isinstance(
        caught.value, diachron.DiachronError
    )
    assert str(caught.value).startswith(f"no diachron service at {url}: ") and "\n" not in str(caught.value)


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000", "https://example.org/diachron/"])
def test_connect_gives_a_remote_client_for_http_and_a_local_client_refuses_it(url):
    client = diachron.connect(url)
    assert isinstance(client, RemoteClient) and type(client) is ExportedRemoteClient
    assert not isinstance(client, Client)
    assert client.uri == url.rstrip("/")
    client.close()
    with pytest.raises(ConfigError) as caught:
        Client(url)
    message = str(caught.value)
    assert "use diachron.connect(url) or diachron.RemoteClient(url)" in message and "\n" not in message
    assert caught.value.setting == "uri" and not caught.value.transient


def test_a_remote_client_refuses_a_path():
    with pytest.raises(ConfigError) as caught:
        RemoteClient("data/diachron.lancedb")
    assert "use diachron.connect(uri) or diachron.Client(uri)" in str(caught.value)
    assert caught.value.setting == "url" and "\n" not in str(caught.value)


def test_connect_hands_options_to_the_remote_client():
    client = connect("http://127.0.0.1:9", timeout=1.5)
    assert client._http.timeout.read == 1.5
    with pytest.raises(TypeError):
        connect("http://127.0.0.1:9", embedder="x")  # a local Client's option


def test_connect_to_a_missing_directory_is_the_local_clients_error(tmp_path):
    where = str(tmp_path / "nothing")
    with pytest.raises(diachron.StoreNotFoundError) as caught:
        connect(where)
    assert caught.value.uri == where and isinstance(caught.value, diachron.TerminalError)
    assert not (tmp_path / "nothing").exists()  # opening never creates the directory


def test_clock_argument_normalises_to_utc():
    assert clock_argument(None, "now") is None
    assert clock_argument(date(2011, 3, 1), "now") == datetime(2011, 3, 1, tzinfo=UTC)
    assert clock_argument(datetime(2011, 3, 1, 12), "now") == datetime(2011, 3, 1, 12, tzinfo=UTC)
    with pytest.raises(ConfigError, match="lies outside the years 1-9999"):
        from datetime import timedelta, timezone

        clock_argument(datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5))), "now")


@pytest.mark.integration
def test_connect_gives_a_local_client_for_a_directory(stock_db):
    client = connect(stock_db[0])
    assert type(client) is Client and client.uri == stock_db[0]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("kwargs", "name"), [({"now": "garbage"}, "now"), ({"as_of": "2020-01-01"}, "as_of")]
)
def test_local_search_refuses_a_clock_that_is_no_datetime(stock_db, kwargs, name):
    with pytest.raises(ConfigError, match=rf"^{name} must be a datetime"):
        Client(stock_db[0]).search("How did IBM stock perform in March 2011?", **kwargs)
