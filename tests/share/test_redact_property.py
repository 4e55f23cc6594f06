"""Property: identifiers of every kind, generated and planted in realistic NCCL, torchrun, Slurm, c10d, env
and Kubernetes lines (and in the folder names), never come out of any command in any format with --redact.

Runs the real CLI entry point in-process (same code path as the console script, without a new interpreter per
run) on real files; bounded to a few examples so the whole test stays well under a minute or two.
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from diagnose.cli import main
from tests.share.conftest import leaks
from tests.share.forms import WATCHDOG

_WORDS = {"rank", "node", "host", "gpu", "cuda", "port", "pid", "job", "user", "main", "worker", "train"}
name = st.from_regex(r"[a-z]{3,7}[0-9]{2,3}", fullmatch=True).filter(lambda s: s.rstrip("0123456789") not in _WORDS)
number = st.integers(min_value=10_000, max_value=65_535).map(str)
bignum = st.integers(min_value=100_000, max_value=99_999_999).map(str)


def _public(v: int) -> bool:
    addr = ipaddress.ip_address(v) if v > 2**32 else ipaddress.IPv4Address(v)
    return not (addr.is_loopback or addr.is_unspecified or addr.is_multicast or addr.is_reserved
                or addr.is_link_local and addr.version == 4)


ip4 = st.integers(min_value=2**24, max_value=2**32 - 2**28).filter(_public).map(lambda v: str(ipaddress.IPv4Address(v)))
ip6 = (st.integers(min_value=2**125, max_value=2**127).map(lambda v: ipaddress.IPv6Address(v))
       .filter(lambda a: len([g for g in a.compressed.split(":") if g]) >= 3 and a.ipv4_mapped is None)
       .map(lambda a: a.compressed))
mac = st.binary(min_size=6, max_size=6).map(lambda b: ":".join(f"{x:02x}" for x in b))
secret = st.from_regex(r"hf_[A-Za-z0-9]{30}", fullmatch=True)
ids = st.fixed_dictionaries({
    "host": name, "host2": name, "host3": name, "host4": name, "fqdn_host": name, "pod": name,
    "domain": st.from_regex(r"[a-z]{4,8}-[a-z]{2,5}", fullmatch=True),
    "ip": ip4, "ip2": ip4, "ip3": ip4, "ip6": ip6, "port": number, "port2": number, "port3": number,
    "user": name, "partition": name, "account": name, "job": bignum, "job2": bignum, "pid": bignum, "tid": bignum,
    "mac": mac, "secret": secret, "project": name,
})


def _lines(i: dict[str, str]) -> list[str]:
    fqdn = f"{i['fqdn_host']}.cluster.{i['domain']}.de"
    return [
        WATCHDOG,
        f"{i['host']}:{i['pid']}:{i['tid']} [0] NCCL INFO NET/Socket : Using [0]eth0:{i['ip']}<{i['port']}>",
        f"{i['host']}:{i['pid']}:{i['tid']} [1] NCCL INFO NET/Socket : Using [0]ib0:{i['ip6']}%ib0<0>",
        f"{i['host']}:{i['pid']}:{i['tid']} [0] NCCL WARN NET/IB : Got completion from peer {i['ip2']}<{i['port2']}> "
        f"with status=12 remoteGids::ffff:{i['ip3']} hca mlx5_0",
        "[2024-03-01 10:00:00,123] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) "
        f"local_rank: 0 (pid: {i['pid']}) of binary: /home/{i['user']}/env/bin/python",
        f"  host      : {fqdn}",
        f"  exitcode  : -9 (pid: {i['pid']})",
        f"[W socket.cpp:601] [c10d] The client socket has failed to connect to [{i['host2']}]:{i['port3']} (errno: 110).",
        f"torch.distributed.DistNetworkError: failed to connect to tcp://{i['host3']}:{i['port3']}",
        f"slurmstepd: error: *** JOB {i['job']} ON {i['host4']} CANCELLED AT 2024-03-01T10:00:00 DUE TO TIME LIMIT ***",
        f"srun: error: {i['host4']}: task 3: Killed",
        f"#SBATCH --partition={i['partition']} --account={i['account']}",
        f"sbatch: Submitted batch job {i['job2']}",
        f"USER={i['user']} HF_TOKEN={i['secret']} MASTER_ADDR={i['ip']} MASTER_PORT={i['port']}",
        f"3: eth0: <BROADCAST> mtu 1500 link/ether {i['mac']} brd ff:ff:ff:ff:ff:ff",
        f"pod {i['pod']}-worker-1 restarted; see {fqdn}-rank0.log",
        f'  File "/home/{i["user"]}/{i["project"]}/train.py", line 88, in main',
    ]


def _run(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    assert code in (0, 3), (argv, code)
    return out.getvalue()


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(ids)
def test_nothing_planted_comes_out(tmp_path_factory, i: dict[str, str]) -> None:
    root = tmp_path_factory.mktemp("prop") / f"{i['partition']}-{i['account']}" / f"{i['host']}-{i['job']}"
    root.mkdir(parents=True)
    lines = _lines(i)
    (root / f"slurm-{i['job']}.out").write_text("\n".join(lines) + "\n")
    (root / f"{i['fqdn_host']}-{i['user']}-steps.bin").write_bytes(b"\0\1\2")
    reports = root / "reports"
    reports.mkdir()
    for rank in (0, 1):
        ev = [{"kind": "log_line", "signature": "python_exception", "rank": rank, "text": f"RuntimeError: {line}",
               "provenance": {"probe": "hook", "host": i["host"], "pid": int(i["pid"]) + rank}} for line in lines]
        (reports / f"rank-{rank}.json").write_text(json.dumps({"rank": rank, "attempt": 0, "evidence": ev}))
    html = root.parent / "r.html"
    planted = [v for v in i.values()] + [f"{i['fqdn_host']}.cluster.{i['domain']}.de"]
    plain = _run("logs", str(root), "--json")
    assert leaks(plain, planted), "unredacted, the planted identifiers show"
    outputs = {
        "logs json+html": _run("logs", str(root), "--json", "--redact", "--html", str(html)),
        "logs text": _run("logs", str(root), "--redact"),
        "logs markdown": _run("logs", str(root), "--markdown"),
        "report json": _run("report", str(reports), "--json", "--redact"),
        "report text": _run("report", str(reports), "--redact"),
        "scaling json": _run("scaling", str(root), "--json", "--redact"),
        "record": _run("record", str(root)),
    }
    outputs["logs html"] = Path(html).read_text()
    for what, text in outputs.items():
        found = leaks(text, planted)
        assert found == [], f"{what} leaks {found}: " + "; ".join(
            text[max(0, text.find(p) - 60):text.find(p) + 30] for p in found)
