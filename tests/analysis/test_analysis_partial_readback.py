"""The loss check over a read-back that could not read every queue (`readback/queues.json`): acknowledged sends
placed where a node was not read are counted as unseen there, not as lost / not_on_slave; lost and not_on_slave
over the rest are exact; verdict.json and the page say which queues could not be read and from where. A run
directory without the file gives the numbers the job gave before it existed; a node of which no queue could be read
makes its metrics unknown."""
from __future__ import annotations

import json
import shutil

import pytest
from known_runs import IOOBE, MASTER_READ_TO, SLAVE_READ_TO, SLAVE_SHORT_END, partial_readback_run

from analysis.errors import RunDirError
from analysis.job import analyze
from analysis.rundir import open_run_dir

VARIANTS = {"partial-run": "partial", "old-run": "none", "slave-gone": "slave-unreadable",
            "master-gone": "master-unreadable", "short-run": "slave-short"}


@pytest.fixture(scope="module")
def partial(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("partial")
    made = {rid: partial_readback_run(root, rid, cov) for rid, cov in VARIANTS.items()}
    job = analyze([p for p, _ in made.values()], spark=spark, progress=False)
    results = {r.run.run_id: r for r in job.results}
    yield made, results
    shutil.rmtree(root, ignore_errors=True)


def _verdict(made, rid: str) -> dict:
    return json.loads((made[rid][0] / "report" / "verdict.json").read_text())


@pytest.mark.spark
def test_sends_beyond_the_read_offset_are_unseen_not_missing(partial):
    made, results = partial
    answers, loss = made["partial-run"][1], results["partial-run"].loss
    assert loss.measured and loss.slave_read
    assert loss.counts["acknowledged"] == 400
    assert loss.counts["lost"] == len(answers.lost) == 3 and loss.samples["lost"] == sorted(answers.lost)
    assert loss.counts["not_on_slave"] == len(answers.not_on_slave) == 3
    assert loss.samples["not_on_slave"] == sorted(answers.not_on_slave)
    # the slave's queue 2 from offset 60: 40 sends, one of them (seq 322) not on the master either, so lost
    assert loss.counts["unseen_slave"] == len(answers.numbers["unseen_slave"]) == 39
    assert set(loss.samples["unseen_slave"]) <= answers.numbers["unseen_slave"]
    assert loss.counts["unseen_master"] == len(answers.numbers["unseen_master"]) == 10
    assert loss.samples["unseen_master"] == sorted(answers.numbers["unseen_master"])
    assert [(q.node, q.queue_id, q.read_to, q.status) for q in loss.unread] == [
        ("master", 3, MASTER_READ_TO, "partial"), ("slave", 2, SLAVE_READ_TO, "partial")]
    assert f"slave broker-a queue 2 from offset {SLAVE_READ_TO} of 100 (partial; MQBrokerException code 1: " \
           f"{IOOBE})" in loss.note
    assert "unseen_master 10, unseen_slave 39" in loss.note


@pytest.mark.spark
def test_past_the_nodes_own_max_offset_a_send_is_known_absent_not_unseen(partial):
    """The real read-only 4.9.1 slave: its queues end below the master's, and the last entries it has fail the pull
    (IOOBE); a send placed past the slave's own max offset is not on the slave (it has no entry there)."""
    made, results = partial
    answers, loss = made["short-run"][1], results["short-run"].loss
    # slave queue 2 read to 60, ends at 80: offsets 60-79 unseen (20), 80-99 absent (20, seq 322 lost on the master)
    assert loss.counts["unseen_slave"] == len(answers.numbers["unseen_slave"]) == SLAVE_SHORT_END - SLAVE_READ_TO
    assert loss.counts["not_on_slave"] == len(answers.not_on_slave) == 3 + 19
    assert set(loss.samples["not_on_slave"]) <= answers.not_on_slave
    assert loss.counts["lost"] == 3
    assert f"slave broker-a queue 2 from offset {SLAVE_READ_TO} of {SLAVE_SHORT_END} (partial" in loss.note


@pytest.mark.spark
def test_expectations_are_measured_over_what_was_read_and_say_what_was_not(partial):
    made, results = partial
    res = {r.name: r for r in results["partial-run"].verdict.results}
    assert {n: (r.measured, r.status) for n, r in res.items()} == {
        "lost": (3.0, "held"), "not-on-slave": (3.0, "held"), "not-on-slave-steady": (3.0, "held"),
        "unseen-slave": (39.0, "held"), "unseen-master": (10.0, "held")}
    assert f"slave broker-a queue 2 from offset {SLAVE_READ_TO}" in res["not-on-slave"].note
    assert "unseen_slave 39" in res["not-on-slave-steady"].note and "master" not in res["not-on-slave"].note
    assert f"master broker-a queue 3 from offset {MASTER_READ_TO}" in res["lost"].note
    v = _verdict(made, "partial-run")
    assert v["valid"] is True and v["exit_code"] == 0
    assert [(q["node"], q["queue_id"], q["read_to"], q["max_offset"], q["error"], q["response_code"], q["remark"])
            for q in v["loss"]["unread"]] == [("master", 3, 90, 100, "MQBrokerException", 1, IOOBE),
                                              ("slave", 2, 60, 100, "MQBrokerException", 1, IOOBE)]
    assert (v["loss"]["lost"], v["loss"]["not_on_slave"], v["loss"]["unseen_slave"]) == (3, 3, 39)
    assert "slave broker-a queue 2 from offset 60" in v["loss"]["note"]
    assert any("readback/queues.json: not read completely" in w for w in v["warnings"])
    page = (made["partial-run"][0] / "report" / "index.html").read_text()
    assert "Queues not read completely" in page and IOOBE in page and "unseen on slave" in page


@pytest.mark.spark
def test_a_run_without_the_coverage_file_is_judged_as_before(partial):
    made, results = partial
    answers, loss = made["old-run"][1], results["old-run"].loss
    assert loss.counts["lost"] == len(answers.lost) == 13  # the unread places count as lost, as before
    assert loss.counts["not_on_slave"] == len(answers.not_on_slave) == 42
    assert (loss.counts["unseen_master"], loss.counts["unseen_slave"]) == (0, 0)
    assert loss.unread == [] and loss.note is None
    v = _verdict(made, "old-run")
    assert v["loss"]["unread"] == [] and v["exit_code"] == 1
    assert {e["name"]: e["status"] for e in v["expectations"]}["lost"] == "failed"
    assert "Queues not read completely" not in (made["old-run"][0] / "report" / "index.html").read_text()


@pytest.mark.spark
def test_a_node_no_queue_of_which_could_be_read_makes_its_metrics_unknown(partial):
    made, results = partial
    slave_gone = results["slave-gone"]
    assert slave_gone.loss.measured and not slave_gone.loss.slave_read
    assert slave_gone.loss.counts["lost"] == 3 and slave_gone.loss.counts["not_on_slave"] is None
    status = {r.name: (r.status, r.note) for r in slave_gone.verdict.results}
    assert status["lost"] == ("held", None)
    for name in ("not-on-slave", "not-on-slave-steady", "unseen-slave"):
        assert status[name][0] == "unknown" and "the slave could not be read back" in status[name][1]
    assert slave_gone.verdict.exit_code == 2
    master_gone = results["master-gone"]
    assert not master_gone.loss.measured and master_gone.loss.counts["lost"] is None
    assert {r.status for r in master_gone.verdict.results} == {"unknown"}
    assert "the master could not be read back" in master_gone.loss.note
    assert f"MQBrokerException: {IOOBE}" in master_gone.loss.note
    assert _verdict(made, "master-gone")["exit_code"] == 2


def test_a_bad_coverage_file_is_refused_in_one_line(tmp_path):
    path, _ = partial_readback_run(tmp_path, "bad-cov")
    cov = path / "readback" / "queues.json"
    data = json.loads(cov.read_text())
    data["queues"][5]["status"] = "half"
    cov.write_text(json.dumps(data))
    with pytest.raises(RunDirError, match=r"queues\.json: queues\[5\]\.status: 'half' is not one of: complete, "
                                          r"partial, unreadable$"):
        open_run_dir(path)
