"""`remoting.javaprops.store_line` against `loads`: any key and value, control characters, separators, blanks and
characters beyond the BMP included, comes back exactly as written (the harness writes broker.conf and namesrv.conf
with it, so no value can start a line of its own), and the line is printable ASCII with one newline, at its end."""
from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from remoting.javaprops import loads, store_line

TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(key=TEXT.filter(bool), value=TEXT)
def test_a_stored_line_loads_back_exactly(key: str, value: str) -> None:
    line = store_line(key, value)
    assert loads(line) == {key: value}
    assert line.endswith("\n") and "\n" not in line[:-1] and "\r" not in line
    assert all(0x20 <= ord(ch) <= 0x7E for ch in line[:-1])


def test_a_newline_in_a_value_cannot_set_another_key() -> None:
    line = store_line("msgTraceTopicName", "RMQ_SYS_TRACE_TOPIC\nstorePathCommitLog=/some/dir")
    assert loads(line) == {"msgTraceTopicName": "RMQ_SYS_TRACE_TOPIC\nstorePathCommitLog=/some/dir"}
    assert "storePathCommitLog" not in loads(line)
