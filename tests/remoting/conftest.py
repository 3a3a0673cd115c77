"""Fixtures for the remoting tests: scripted servers (closed at teardown) and clients (shut down at teardown)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from remoting_scripted_server import RefusingAddress, ScriptedServer, broker_handler, namesrv_handler  # noqa: E402

from remoting.client import RemotingClient  # noqa: E402


@pytest.fixture
def server_factory():
    """`server_factory(handler)` starts a ScriptedServer on 127.0.0.1; all are closed at teardown."""
    made: list[ScriptedServer] = []

    def make(handler) -> ScriptedServer:
        server = ScriptedServer(handler)
        made.append(server)
        return server

    yield make
    for server in made:
        server.close()


@pytest.fixture
def refused_addr():
    """`refused_addr()`: a 127.0.0.1 address that refuses connections until teardown (a `RefusingAddress`)."""
    held: list[RefusingAddress] = []

    def make() -> str:
        held.append(RefusingAddress())
        return held[-1].addr

    yield make
    for address in held:
        address.close()


@pytest.fixture
def broker_factory(server_factory):
    """`broker_factory(script=None)`: a scripted broker (SEND_OK by default)."""

    def make(script=None) -> ScriptedServer:
        handler = broker_handler(script)
        server = server_factory(handler)
        handler.holder["port"] = server.port
        return server

    return make


@pytest.fixture
def namesrv_factory(server_factory):
    """`namesrv_factory(routes)`: a scripted name server serving {topic: TopicRouteData}."""
    return lambda routes: server_factory(namesrv_handler(routes))


@pytest.fixture
def client_factory():
    """`client_factory(**kwargs)` makes RemotingClients that are shut down at teardown."""
    made: list[RemotingClient] = []

    def make(*args, **kwargs) -> RemotingClient:
        client = RemotingClient(*args, **kwargs)
        made.append(client)
        return client

    yield make
    for client in made:
        client.shutdown()

