"""The launcher table (rules/signatures/live/processes.yaml) against its examples, and rank ids from py-spy locals."""

from __future__ import annotations

import re

import pytest

from diagnose.probes.live import discovery, rankid, stacks

SIG = discovery.process_signatures()


@pytest.mark.parametrize("cmdline", SIG["examples"]["rank_arguments"])
def test_rank_argument_examples(cmdline) -> None:
    assert discovery._argument(cmdline, "rank")[0] == 3


@pytest.mark.parametrize("cmdline", SIG["examples"]["not_rank_arguments"])
def test_rank_argument_near_misses(cmdline) -> None:
    assert discovery._argument(cmdline, "rank") == (None, None)


def test_every_pattern_compiles_and_local_rank_is_not_a_rank() -> None:
    for key in ("never_ranks", "spawned_child", "forkserver"):
        assert isinstance(SIG[f"{key}_re"], re.Pattern)
    assert discovery._argument("train.py --local_rank=2", "local_rank")[0] == 2
    assert discovery._argument("train.py --local_rank=2", "rank") == (None, None)


def _frames(user_rank: int | None, index: int | None) -> list[dict]:
    frames = []
    if user_rank is not None:
        frames.append({"name": "worker", "filename": "/work/train.py", "short_filename": "train.py",
                       "locals": [{"name": "rank", "repr": str(user_rank), "arg": True}]})
    if index is not None:
        frames.append({"name": "_wrap", "filename": "/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py",
                       "short_filename": "torch/multiprocessing/spawn.py",
                       "locals": [{"name": "i", "repr": str(index), "arg": True}]})
    return frames


def test_ranks_from_locals_prefers_the_spawn_index_and_needs_distinct_ranks() -> None:
    library = stacks.frame_signatures()["library_re"]
    found = rankid.ranks_from_locals({10: _frames(5, 0), 11: _frames(6, 1)}, SIG, library)
    assert {p: r for p, (r, _) in found.items()} == {10: 0, 11: 1}
    assert "process index i=0 in _wrap" in found[10][1]
    assert rankid.ranks_from_locals({10: _frames(1, None), 11: _frames(1, None)}, SIG, library) == {}
    user = rankid.ranks_from_locals({10: _frames(1, None), 11: _frames(0, None)}, SIG, library)
    assert {p: r for p, (r, _) in user.items()} == {10: 1, 11: 0}


def test_identified_line_groups_environment_ranks() -> None:
    job = discovery.Job(kind="pid", id="1")
    job.ranks = [discovery.ProcInfo(pid=10 + r, ppid=1, cmdline="python t.py", env={}, rank=r, rank_var="RANK",
                                    rank_source="RANK in its environment") for r in range(16)]
    assert discovery.identified_line(job) == "ranks identified by ranks 0-15: RANK in its environment"


def test_exit_after_reads_the_block_from_the_source(tmp_path) -> None:
    from diagnose.probes.live import flow

    src = tmp_path / "train.py"
    src.write_text("def f(rank):\n    for i in range(5):\n        if rank == 1:\n            sleep(1)\n"
                   "            continue\n        all_reduce()\n\ndef g():\n    x = work()\n    all_reduce(x)\n"
                   "    return x\n")
    assert flow.exit_after(str(src), 4) == 5  # sleep, then continue past the all_reduce on line 6
    assert flow.exit_after(str(src), 6) is None
    assert flow.exit_after(str(src), 9) == 11  # the return comes after the all_reduce on line 10
    assert flow.exit_after(str(tmp_path / "gone.py"), 4) is None


def test_master_port_connections_come_from_one_read_of_the_tcp_table() -> None:
    """A real listener (rank 0, the store) and a real client (rank 1) on a loopback port, counted per pid."""
    import os
    import socket
    import subprocess
    import sys

    from diagnose.probes.live.discovery import ProcInfo
    from diagnose.probes.live.procstate import master_connections_of

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    client = subprocess.Popen([sys.executable, "-c", "import socket,sys,time; s=socket.create_connection(('127.0.0.1',"
                               f"{port})); sys.stdout.write('up\\n'); sys.stdout.flush(); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert client.stdout.readline() == "up\n"
        conn, _ = server.accept()
        env = {"MASTER_PORT": str(port)}
        ranks = [ProcInfo(pid=os.getpid(), ppid=1, cmdline="store", env=env, rank=0),
                 ProcInfo(pid=client.pid, ppid=1, cmdline="rank1", env=env, rank=1),
                 ProcInfo(pid=client.pid + 10**6, ppid=1, cmdline="gone", env={}, rank=2)]
        counts = master_connections_of(ranks)
        assert counts[os.getpid()] == 2  # the listening socket and the accepted connection
        assert counts[client.pid] == 1
        assert client.pid + 10**6 not in counts  # no MASTER_PORT: nothing to count
        conn.close()
    finally:
        client.kill()
        server.close()
