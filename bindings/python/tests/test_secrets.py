"""No exception, repr or attribute shows the password of the URL."""

from __future__ import annotations

import socket
import traceback

import pytest

import hilock

SECRET = "topsecret"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _clean(exc: BaseException) -> None:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    for what in (str(exc), repr(exc), text, getattr(exc, "detail", ""), repr(exc.args)):
        assert SECRET not in what, what


def test_unreachable_with_password(redis_server):  # type: ignore[no-untyped-def]
    url = "redis://alice:%s@127.0.0.1:%d/0" % (SECRET, _free_port())
    with pytest.raises(hilock.ConnectionError) as ei:
        hilock.Client(url, connect_timeout=2.0, retry_attempts=0)
    _clean(ei.value)


def test_refused_credentials(redis_server):  # type: ignore[no-untyped-def]
    # the server has no user alice
    url = "redis://alice:%s@127.0.0.1:%d/0" % (SECRET, redis_server.port)
    with pytest.raises(hilock.AuthenticationError) as ei:
        hilock.Client(url, retry_attempts=0)
    _clean(ei.value)


@pytest.mark.parametrize("tail", [
    "/abc",                   # database
    "/0?x=1",                 # query string
    ":99999/0",               # port
    "#frag",                  # fragment
])
def test_bad_urls(redis_server, tail):  # type: ignore[no-untyped-def]
    host = "127.0.0.1" if tail.startswith(":") else "127.0.0.1:%d" % redis_server.port
    url = "redis://alice:%s@%s%s" % (SECRET, host, tail)
    with pytest.raises(hilock.InvalidArgumentError) as ei:
        hilock.Client(url)
    _clean(ei.value)
    assert "alice:***@" in str(ei.value)


def test_other_schemes_and_oddities():  # type: ignore[no-untyped-def]
    # rediss:// is TLS: nobody listens, and the message keeps the secret
    with pytest.raises(hilock.HilockError) as ei:
        hilock.Client("rediss://alice:%s@127.0.0.1:%d" % (SECRET, _free_port()), connect_timeout=2.0)
    _clean(ei.value)
    for url in ("http://alice:%s@127.0.0.1:6379" % SECRET,
                "redis://alice:top/%s@127.0.0.1:6379/x" % SECRET,
                "redis://%s@127.0.0.1:6379/x" % SECRET):
        with pytest.raises(hilock.InvalidArgumentError) as ei:
            hilock.Client(url)
        _clean(ei.value)


def test_query_string_is_named(redis_server):  # type: ignore[no-untyped-def]
    with pytest.raises(hilock.InvalidArgumentError, match="query string"):
        hilock.Client("redis://127.0.0.1:%d/0?x=1" % redis_server.port)


def test_connected_client_keeps_no_password(redis_server):  # type: ignore[no-untyped-def]
    # Redis's default user has no password here: AUTH default <anything> works.
    url = "redis://default:%s@127.0.0.1:%d/0" % (SECRET, redis_server.port)
    with hilock.Client(url) as c:
        assert c.url == "redis://default:***@127.0.0.1:%d/0" % redis_server.port
        assert SECRET not in repr(c)
        for v in vars(c).values():
            assert SECRET not in repr(v)
        with c.lock("secrets:ok"):
            pass
    # also a password with characters a simple pattern would stop at
    url = "redis://default:a/b@c%s@127.0.0.1:%d/0" % (SECRET, redis_server.port)
    with pytest.raises(hilock.HilockError) as ei:
        hilock.Client(url)  # the '/' ends the authority for the parser
    _clean(ei.value)
