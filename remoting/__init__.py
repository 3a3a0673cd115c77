"""The RocketMQ remoting protocol in pure Python: frame codec, connections, name-server and admin calls,
a producer with the Java client's send semantics, and a pull consumer. Depends on nothing else of ours."""
from __future__ import annotations
