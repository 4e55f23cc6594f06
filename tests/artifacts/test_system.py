"""System tool outputs parsed into SystemFact values (real outputs from this machine and documented layouts)."""

from __future__ import annotations

from artifact_helpers import facts

from diagnose.commands.logs import run_logs
from diagnose.probes.artifacts import parse


def test_nvidia_smi_table() -> None:
    got = facts("docs/nvidia_smi.txt")
    assert got["gpu_count"] == 2 and got["gpu_model"] == "NVIDIA A100-SXM4-80GB"
    assert got["driver_version"] == "550.54.15" and got["cuda_version"] == "12.4"
    assert got["gpu_memory_used_max_mib"] == 40962 and got["gpu_processes_max"] == 1


def test_nvidia_smi_query_csv() -> None:
    got = facts("docs/nvidia_smi_query.csv")
    assert got["gpu_count"] == 4 and got["gpu_model"] == "NVIDIA H100 80GB HBM3"


def test_topology_matrices() -> None:
    pcie, nvlink = facts("docs/topo_pcie.txt"), facts("docs/topo_nvlink.txt")
    assert pcie["gpu_count"] == 4 and pcie["topo_nvlink"] is False and pcie["topo_worst_path"] == "SYS"
    assert nvlink["gpu_count"] == 4 and nvlink["topo_nvlink"] is True


def test_nccl_tests_table() -> None:
    got = facts("docs/nccl_tests.txt")
    assert got["nccl_busbw_avg"] == 1.07333 and got["nccl_busbw_large"] == 1.18 and got["nccl_tests_ranks"] == 2


def test_ibstat_lspci_dmesg() -> None:
    ib = facts("docs/ibstat.txt")
    assert ib["ib_ports_active"] == 0 and ib["ib_ports_down"] == 1 and ib["ib_link_layer"] == "Ethernet"
    hw = facts("docs/lspci_dmesg.txt")
    assert hw["xid"] == 79 and hw["pci_devices"] == 3


def test_real_collect_env_and_pip_list() -> None:
    env = facts("real/collect_env.txt")
    assert env["torch_version"] == "2.13.0+cpu" and env["cuda_available"] == "False"
    assert env["python_version"].startswith("3.11")
    assert facts("real/pip_list.txt")["torch_version"] == "2.13.0+cpu"


def test_real_host_tools() -> None:
    assert facts("real/free.txt")["host_mem_total"] > 1 << 30
    assert facts("real/df_shm.txt")["shm_size"] > 0
    limits = facts("real/ulimit.txt")
    assert isinstance(limits["open_files"], int) and "memlock_kib" in limits
    assert facts("real/ps_aux.txt")["zombie_processes"] == 0


def test_real_stack_and_profiles() -> None:
    assert facts("real/pyspy_dump.txt")["main_thread_top"] == "<module> (<string>:1)"
    assert facts("real/strace_c.txt")["top_syscall"] == "newfstatat"
    prof = facts("real/profiler_table.txt")
    assert prof["profiler_top_op"] == "aten::mm" and prof["profiler_comm_share"] == 0.0


# The Processes table of a pre-450 driver (no GI/CI columns), its last row cut by the paste; the layout is the one
# pytorch/pytorch#23138 shows (every rank also holding a context on GPU 0 after torch.load without map_location).
OLD_SMI_PROCESSES = """+-----------------------------------------------------------------------------+
| Processes:                                                       GPU Memory |
|  GPU       PID   Type   Process name                             Usage      |
|=============================================================================|
|    0     41000      C   /usr/bin/python3.6                          4903MiB |
|    0     41001      C   /usr/bin/python3.6                           725MiB |
|    0     41002      C   /usr/bin/python3.6                           725MiB |
|    1     41001      C   /usr/bin/python3.6                          4100MiB |
|    2     41002      C   /usr/bin/python3.6
"""


def test_old_driver_process_table_shows_a_rank_on_another_gpu(tmp_path) -> None:
    found, _ = parse("nvidia-smi.txt", OLD_SMI_PROCESSES)
    got = {e.name: e for e in found if e.kind == "system_fact"}
    assert got["gpu_processes_max"].value == 3
    assert got["gpu_pids_on_several_gpus"].value == 2 and "process 41001 holds memory on GPUs 0, 1" in got[
        "gpu_pids_on_several_gpus"].detail
    (tmp_path / "nvidia-smi.txt").write_text(OLD_SMI_PROCESSES)
    top = run_logs([tmp_path]).causes[0]
    assert top.id == "rank_env_mismatch" and "ranks-touch-other-gpus" in top.rules
    assert top.evidence[0].line == 5


def test_one_process_per_gpu_accuses_nobody(tmp_path) -> None:
    healthy = OLD_SMI_PROCESSES.replace("|    1     41001", "|    1     41003").replace("|    2     41002", "|    2     41004")
    # drop GPU 0's two extra contexts (725MiB each): then every PID holds one GPU and each GPU one PID
    healthy = "\n".join(line for line in healthy.splitlines() if "725MiB" not in line)
    (tmp_path / "nvidia-smi.txt").write_text(healthy + "\n")
    assert all(c.id != "rank_env_mismatch" for c in run_logs([tmp_path]).causes)


def test_nvidia_smi_idle_gpus_and_shared_gpu() -> None:
    """Issue 11 item 3: GPUs at 0% with no process beside busy ones; several processes on one GPU only."""
    idle = facts("docs/nvidia_smi_two_idle.txt")
    assert idle["gpus_idle_beside_busy"] == 2 and "gpu_shared_by_processes" not in idle
    gpu0 = facts("docs/nvidia_smi_all_on_gpu0.txt")
    assert gpu0["gpu_shared_by_processes"] == 4 and gpu0["gpus_idle_beside_busy"] == 3
    busy = facts("docs/nvidia_smi.txt")  # every GPU works, one process each
    assert "gpus_idle_beside_busy" not in busy and "gpu_shared_by_processes" not in busy


def test_rank_on_own_gpu_and_gpu0_is_not_shared() -> None:
    """A PID on its own GPU and on GPU 0 (set_device missing) is the ranks-touch-other-gpus case, not sharing."""
    text = "\n".join([
        "| Processes:                                                                  |",
        "|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |",
        "|    0   N/A  N/A     100      C   python                           9000MiB |",
        "|    0   N/A  N/A     101      C   python                            700MiB |",
        "|    1   N/A  N/A     101      C   python                           9000MiB |",
    ])
    names = {f.name: f.value for f in parse("smi.txt", text)[0] if f.kind == "system_fact"}
    assert names.get("gpu_pids_on_several_gpus") == 1 and "gpu_shared_by_processes" not in names


def test_process_rows_pasted_without_their_header() -> None:
    """A paste of the Processes table's rows alone (no 'Process name' header) is still read; a GPU row is not."""
    rows = [f"|    0   N/A  N/A   {pid}      C   python train.py        871MiB |" for pid in (200, 201, 202)]
    names = {f.name: f.value for f in parse("smi.txt", "\n".join(rows))[0] if f.kind == "system_fact"}
    assert names.get("gpu_shared_by_processes") == 3
    gpu_rows = "| N/A   33C    P0    61W /  400W |   40962MiB /  81920MiB |     97%      Default |"
    assert not [f for f in parse("smi.txt", gpu_rows)[0] if f.kind == "system_fact" and "process" in f.name]


def test_shm_topology_and_cuda_build_from_wheel() -> None:
    assert facts("docs/df_shm_docker.txt")["shm_size"] == 64 * 1024 * 1024
    phb = facts("docs/topo_phb.txt")
    assert phb["topo_nvlink"] is False and phb["topo_worst_path"] == "PHB"
    pip = facts("docs/pip_list_cu121.txt")
    assert pip["torch_version"] == "2.1.2+cu121" and pip["cuda_build"] == "12.1"


def test_free_available_share() -> None:
    assert facts("real/free.txt")["host_mem_available_share"] == 0.913
    assert facts("docs/free_nearly_full.txt")["host_mem_available_share"] == round(3 / 503, 4)


def test_hf_env_block_versions_and_prereleases() -> None:
    """`transformers-cli env` lines give versions; dev/nightly builds are counted, an NGC snapshot is not."""
    text = "\n".join([
        "- `transformers` version: 4.41.0.dev0",
        "- Accelerate version: 0.30.1",
        "- PyTorch version (GPU?): 2.4.0.dev20240516+cu118 (True)",
    ])
    names = {f.name: f for f in parse("env.txt", text)[0] if f.kind == "system_fact"}
    assert names["transformers_version"].value == "4.41.0.dev0" and names["accelerate_version"].value == "0.30.1"
    assert names["prerelease_packages"].value == 2 and "torch 2.4.0.dev20240516+cu118" in names["prerelease_packages"].detail
    ngc = {f.name: f.value for f in parse("env.txt", "- PyTorch version (GPU?): 2.2.0a0+81ea7a4 (True)")[0]
           if f.kind == "system_fact"}
    assert ngc["torch_version"] == "2.2.0a0+81ea7a4" and "prerelease_packages" not in ngc


def test_free_snapshots_that_keep_growing() -> None:
    """Several `free` outputs of one paste: used memory rising 1.5x or more is a trend; one that falls is not."""
    header = "              total        used        free      shared  buff/cache   available"
    rows = [f"Mem:       62880028 {used:11d}    40000000       95508     1369712    40000000" for used in
            (5909424, 9803196, 12532152, 16577944)]
    names = {f.name: f.value for f in parse("free.txt", "\n".join(x for r in rows for x in (header, r)))[0]
             if f.kind == "system_fact"}
    assert names["host_mem_used_growth"] == 2.81
    falling = [rows[0], rows[2], rows[1], rows[3].replace("16577944", " 9000000")]
    names = {f.name for f in parse("free.txt", "\n".join(x for r in falling for x in (header, r)))[0]
             if f.kind == "system_fact"}
    assert "host_mem_used_growth" not in names


def test_gpu_benchmarks_that_printed_no_result() -> None:
    """nccl-tests' device table without result rows, and the P2P sample without its closing note, are stalls."""
    table = "\n".join(f"#  Rank  {r} Group  0 Pid    149 on     llm207 device  {r} [0x56] NVIDIA A100" for r in (0, 1))
    names = {f.name: f.value for f in parse("nccl.txt", table)[0] if f.kind == "system_fact"}
    assert names["gpu_benchmark_no_results"] == 1 and names["nccl_tests_ranks"] == 2
    done = table + "\n#       size         count      type   redop    root     time   algbw   busbw #wrong" + "\n   134217728      33554432     float     sum      -1   1420.5   94.49  165.35      0   1418.2   94.64  165.62      0"
    assert "gpu_benchmark_no_results" not in {f.name for f in parse("nccl.txt", done)[0] if f.kind == "system_fact"}
    p2p = "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\nUnidirectional P2P=Disabled Bandwidth Matrix (GB/s)"
    assert {f.name for f in parse("p2p.txt", p2p)[0] if f.kind == "system_fact"} == {"gpu_benchmark_no_results"}
    closed = p2p + "\nNOTE: The CUDA Samples are not meant for performance measurements."
    assert "gpu_benchmark_no_results" not in {f.name for f in parse("p2p.txt", closed)[0] if f.kind == "system_fact"}


def test_pip_install_transcript_names_the_torch_build() -> None:
    # HRNet/HigherHRNet-Human-Pose-Estimation#116: pip's closing line, then the crash
    found, _ = parse("console.txt", "Successfully installed torch-1.8.1+cu101 torchaudio-0.8.1 torchvision-0.9.1+cu101\n"
                                    "$ python tools/dist_train.py --cfg w32.yaml\nSegmentation fault (core dumped)\n")
    got = {f.name: f.value for f in found if f.kind == "system_fact"}
    assert got["torch_version"] == "1.8.1+cu101" and got["cuda_build"] == "10.1"
    assert got["torchvision_version"] == "0.9.1+cu101"
