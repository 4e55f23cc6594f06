"""c10d looks the store host up per address family: a failed IPv6 lookup alone is a harmless warning that
many healthy logs carry; a failed IPv4 lookup is the rendezvous host not resolving."""

from __future__ import annotations

from diagnose.commands.logs import run_logs

IPV6 = ("[W socket.cpp:697] [c10d] The IPv6 network addresses of (node-7.cluster, 29500) cannot be retrieved "
        "(gai error: -2 - Name or service not known).")
IPV4 = ("[W socket.cpp:697] [c10d] The IPv4 network addresses of (trn-login, 29500) cannot be retrieved "
        "(gai error: -2 - Name or service not known).")
OOM = "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.15 GiB"


def test_the_ipv6_warning_never_outranks_the_real_failure(tmp_path) -> None:
    log = tmp_path / "train.log"
    log.write_text(f"[rank0]:{IPV6}\n[rank1]:{IPV6}\nstep 10\n{OOM}\n")
    report = run_logs([log])
    assert report.causes and report.causes[0].ranks == [1]
    assert all(c.id != "rendezvous_misconfig" for c in report.causes), [c.id for c in report.causes]


def test_a_failed_ipv4_lookup_is_the_host_not_resolving(tmp_path) -> None:
    log = tmp_path / "rank3.log"
    log.write_text(f"{IPV6}\n{IPV4}\n")
    top = run_logs([log]).causes[0]
    assert (top.id, top.ranks) == ("rendezvous_misconfig", [3])
    assert any("IPv4 network addresses of (trn-login" in e.text for e in top.evidence)
