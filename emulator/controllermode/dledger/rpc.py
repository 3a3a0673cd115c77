"""DLedger's peer RPCs on the remoting port (`DLedgerRequestCode`: VOTE 51001, HEART_BEAT 51002, PUSH 51004) with
JSON bodies, and the client a member calls its peers with: every call has a timeout, an unreachable or frozen peer
is an error (None), never a hang of the caller."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from remoting.client import RemotingClient
from remoting.command import make_request
from remoting.errors import RemotingError

VOTE = 51001
HEART_BEAT = 51002
PUSH = 51004
RPC_TIMEOUT_MS = 3000


class PeerClient:
    def __init__(self, version: int) -> None:
        self.client = RemotingClient()
        self.version = version
        self.pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="DLedgerRpcService")

    def call(self, addr: str, code: int, body: dict, timeout_ms: float = RPC_TIMEOUT_MS) -> dict | None:
        request = make_request(code, None, json.dumps(body).encode(), version=self.version)
        try:
            response = self.client.invoke_sync(addr, request, timeout_ms)
        except RemotingError:
            return None
        if response.code != 0 or not response.body:
            return None
        return json.loads(response.body)

    def submit(self, addr: str, code: int, body: dict, timeout_ms: float = RPC_TIMEOUT_MS):
        """A future of `call`."""
        return self.pool.submit(self.call, addr, code, body, timeout_ms)

    def close(self) -> None:
        self.pool.shutdown(wait=False)
        self.client.shutdown()
