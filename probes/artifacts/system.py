"""System tool outputs -> SystemFact evidence (``rules/artifacts/system.yaml``).

Simple outputs are table-driven (``line_facts``: named groups become facts; ``count_facts``: distinct
values are counted); the topology matrix, nccl-tests, strace -c, profiler tables, nvidia-smi processes,
py-spy/gdb dumps and ps listings are read as tables. A file is only searched for the patterns whose
``needs`` strings it holds; tables are capped at ``max_rows`` rows.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from itertools import pairwise
from typing import Any

from diagnose.evidence import SystemFact
from diagnose.probes.artifacts.source import Source, to_float, to_int
from diagnose.probes.artifacts.spec import FamilySpec, family
from diagnose.yamlload import number_table

__all__ = ["parse", "size_bytes"]

_UNITS = number_table("units", "bytes")


def size_bytes(text: str, default_unit: str = "") -> int | None:
    """Bytes of a size such as ``64M``, ``503Gi``, ``7.5G`` (free, df -h)."""
    t = text.strip().rstrip("iB").upper() if text else ""
    unit = t[-1] if t and t[-1] in _UNITS and not t[-1].isdigit() else default_unit
    num = to_float(t[:-1] if t and not t[-1].isdigit() else t)
    return int(num * _UNITS[unit]) if num is not None else None


class _Facts:
    def __init__(self, src: Source) -> None:
        self.src, self.items = src, []

    def add(self, tool: str, name: str, value: Any, line: int | None, detail: str | None = None,
            text: str | None = None) -> None:
        if value is None or value == "":
            return
        self.items.append(SystemFact(tool=tool, name=name, value=value, detail=detail, rank=self.src.rank,
                                     provenance=self.src.prov(line), text=(text or detail or f"{name}={value}")[:500]))

    def line_of(self, fact: SystemFact) -> int | None:
        """The line of this source that ``fact`` was read from (``add`` takes it so: provenance lines are offset)."""
        return fact.provenance.line - self.src.line_offset if fact.provenance.line is not None else None


def _version_fact(spec: FamilySpec, pkg: str) -> str:
    """The fact a package's version is kept as (torch_version, nccl_version ...; else '<pkg>_version')."""
    return spec.tables["packages"].get(pkg, f"{pkg.lower()}_version")


def _simple(src: Source, spec: FamilySpec, active: set[str], facts: _Facts) -> None:
    counts: dict[tuple[str, str], dict[str, Any]] = {}  # (pattern, fact): one pattern may count several keys
    for rule in spec.tables["count_facts"]:
        if rule["pattern"] in active:
            counts[rule["pattern"], rule["fact"]] = {"rule": rule, "keys": {}, "labels": Counter(), "line": None}
    line_rules = [r for r in spec.tables["line_facts"] if r["pattern"] in active]
    envs = "env_torch" in active
    packages = "package" in active
    hf_env = "hf_env_version" in active
    template = "template_version" in active
    installed = "pip_installed" in active
    ulimit = "ulimit_line" in active
    ib = "ib_state" in active
    ib_states: Counter[str] = Counter()
    ib_line = None
    for no, line in enumerate(src.lines, 1):
        for rule in line_rules:
            m = spec.rx(rule["pattern"]).search(line)
            if m:
                for group, name in rule["facts"].items():
                    val = m.group(group)
                    if val is not None:
                        facts.add(rule["tool"], name, _value(name, val), no, text=line.strip())
        for (pat, _), c in counts.items():
            m = spec.rx(pat).search(line)
            if m:
                key = c["rule"]["key"]  # "line": each matching line is one item (a list without indexes)
                c["keys"].setdefault(str(no) if key == "line" else m.group(key), no)
                c["line"] = c["line"] or no
                if c["rule"].get("label"):
                    c["labels"][m.group(c["rule"]["label"]).strip()] += 1
        if envs and (m := spec.rx("env_torch").match(line)):
            name = spec.tables["collect_env"][m.group("key")]
            facts.add("collect_env", name, m.group("value"), no, text=line.strip())
        if packages and (m := spec.rx("package").match(line)):
            facts.add("packages", _version_fact(spec, m.group("pkg")), m.group("ver"), no, text=line.strip())
        if installed and line.lstrip().startswith("Successfully installed "):
            for m in spec.rx("pip_installed").finditer(line):
                facts.add("pip", _version_fact(spec, m.group("pkg")), m.group("ver"), no, text=line.strip())
        if hf_env and (m := spec.rx("hf_env_version").match(line)):
            facts.add("env", _version_fact(spec, m.group("pkg")), m.group("ver"), no, text=line.strip())
        elif template and (m := spec.rx("template_version").match(line)):
            facts.add("issue template", _version_fact(spec, m.group("pkg")), m.group("ver"), no, text=line.strip())
        if ulimit and (m := spec.rx("ulimit_line").match(line)):
            name = spec.tables["ulimit"].get(m.group("flag"))
            if name:
                val = m.group("value")
                facts.add("ulimit", name, to_int(val) if val.isdigit() else val, no, text=line.strip())
        if ib and (m := spec.rx("ib_state").match(line)):
            ib_states[m.group("state").capitalize()] += 1
            ib_line = ib_line or no
    for c in counts.values():
        rule = c["rule"]
        facts.add(_tool(rule), rule["fact"], len(c["keys"]), c["line"],
                  detail=", ".join(f"{k}" for k in list(c["keys"])[:16]))
        if rule.get("label_fact") and c["labels"]:
            label, _ = c["labels"].most_common(1)[0]
            facts.add(_tool(rule), rule["label_fact"], label, c["line"])
    if ib_states:
        facts.add("ibstat", "ib_ports_active", ib_states.get("Active", 0), ib_line,
                  detail=", ".join(f"{k} {v}" for k, v in ib_states.items()))
        facts.add("ibstat", "ib_ports_down", ib_states.get("Down", 0), ib_line)


def _tool(rule: dict[str, Any]) -> str:
    return str(rule["tool"])


def _value(name: str, val: str) -> Any:
    if name in ("host_mem_total", "host_mem_used", "host_mem_available", "shm_size"):
        return size_bytes(val, "K")
    if name in ("xid",):
        return int(val)
    if name.startswith("nccl_busbw"):
        return to_float(val)
    return val


def _topology(src: Source, spec: FamilySpec, facts: _Facts) -> None:
    order = spec.tables["topo_order"]
    header, row_rx = spec.rx("topo_header"), spec.rx("topo_row")
    paths: Counter[str] = Counter()
    first, gpus = None, set()
    in_matrix = False
    for no, line in enumerate(src.lines, 1):
        if header.match(line):
            in_matrix, first = True, first or no
            continue
        if not in_matrix:
            continue
        m = row_rx.match(line)
        if not m:
            in_matrix = bool(line.strip()) and not line.lstrip().startswith("Legend")
            continue
        if m.group("row").startswith("GPU"):
            gpus.add(m.group("row"))
            for cell in m.group("cells").split():
                if cell != "X":
                    paths["NV" if cell.startswith("NV") else cell] += 1
    if not gpus:
        return
    worst = max(paths, key=lambda p: order.index(p) if p in order else -1) if paths else "X"
    detail = ", ".join(f"{p} x{n}" for p, n in sorted(paths.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99))
    facts.add("nvidia-smi-topo", "gpu_count", len(gpus), first, detail=f"{len(gpus)} GPUs in the topology matrix")
    facts.add("nvidia-smi-topo", "topo_nvlink", "NV" in paths, first, detail=detail or "one GPU")
    facts.add("nvidia-smi-topo", "topo_worst_path", worst, first, detail=f"GPU-GPU paths: {detail}")


def _tables(src: Source, spec: FamilySpec, active: set[str], facts: _Facts) -> None:
    cap = int(spec.tables["max_rows"])
    if "nccl_tests_row" in active:
        rows = [(no, to_float(m.group("busbw")), int(m.group("size"))) for no, line in enumerate(src.lines, 1)
                if (m := spec.rx("nccl_tests_row").match(line))][:cap]
        if rows:
            no, bw, size = max(rows, key=lambda r: r[2])
            facts.add("nccl-tests", "nccl_busbw_large", bw, no, detail=f"busbw {bw} GB/s at {size} bytes")
    if "strace_row" in active:
        rows = [(no, to_float(m.group("pct")), m.group("syscall")) for no, line in enumerate(src.lines, 1)
                if (m := spec.rx("strace_row").match(line))][:cap]
        if rows:
            no, pct, call = max(rows, key=lambda r: r[1] or 0)
            facts.add("strace", "top_syscall", call, no, detail=f"{call} {pct}% of system-call time")
    if "profiler_row" in active:
        _profiler(src, spec, facts, cap)
    procs = _process_rows(src, spec) if "smi_process_row" in active else None
    compute = _compute_by_gpu(procs) if procs is not None else None
    if procs:
        per_gpu: dict[str, list[str]] = defaultdict(list)
        for _, gpu, pid, _ in procs:
            per_gpu[gpu].append(pid)
        first = procs[0][0]
        most = max(per_gpu.items(), key=lambda kv: len(kv[1]))
        facts.add("nvidia-smi", "gpu_processes_max", len(most[1]), first,
                  detail=f"GPU {most[0]} holds {len(most[1])} process(es)")
        gpus_of: dict[str, set[str]] = defaultdict(set)
        for gpu, pids in per_gpu.items():
            for pid in pids:
                gpus_of[pid].add(gpu)
        own: dict[int, list[str]] = defaultdict(list)  # compute processes holding this GPU and no other
        compute_pids = compute or {}
        for gpu, held in compute_pids.items():
            own[gpu] = [p for p in held if sum(p in q for q in compute_pids.values()) == 1]
        if own and (shared := max(own.items(), key=lambda kv: len(kv[1])))[1][1:]:
            facts.add("nvidia-smi", "gpu_shared_by_processes", len(shared[1]), first,
                      detail=f"GPU {shared[0]} holds {len(shared[1])} processes that use no other GPU "
                             f"(PIDs {', '.join(sorted(shared[1])[:8])})")
        spread = sorted(pid for pid, gpus in gpus_of.items() if len(gpus) > 1)
        if spread:
            facts.add("nvidia-smi", "gpu_pids_on_several_gpus", len(spread), first,
                      detail=f"process {spread[0]} holds memory on GPUs {', '.join(sorted(gpus_of[spread[0]]))}"
                             f" ({len(spread)} process(es) on more than one GPU)")
    if "smi_mem_row" in active:
        used = [(no, int(m.group("used")), int(m.group("total")), int(m.group("util")))
                for no, line in enumerate(src.lines, 1) if (m := spec.rx("smi_mem_row").match(line))]
        if used:
            no, u, t, _ = max(used, key=lambda r: r[1])
            facts.add("nvidia-smi", "gpu_memory_used_max_mib", u, no, detail=f"{u} MiB of {t} MiB used on one GPU")
            _idle_beside_busy(spec, used, compute, facts)
    if "pyspy_thread" in active or "gdb_frame" in active:
        _stacks(src, spec, facts)
    if "smi_csv_header" in active:
        _smi_csv(src, spec, facts)
    if "ps_row" in active:
        rows = [(no, m) for no, line in enumerate(src.lines, 1) if (m := spec.rx("ps_row").match(line))][:cap]
        trainers = [(no, m) for no, m in rows if any(w in m.group("cmd") for w in spec.tables["ps_trainers"])]
        if trainers:
            facts.add("ps", "training_processes", len(trainers), trainers[0][0],
                      detail=f"{len(trainers)} training process(es) listed")
        zombies = [(no, m) for no, m in rows if m.group("stat").startswith("Z")]
        if rows:
            facts.add("ps", "zombie_processes", len(zombies), (zombies or rows)[0][0])


def _process_rows(src: Source, spec: FamilySpec) -> list[tuple[int, str, str, str]]:
    """(line, GPU index, PID, type) of each row of nvidia-smi's Processes table, read once."""
    return [(no, m.group("gpu"), m.group("pid"), m.group("type")) for no, line in enumerate(src.lines, 1)
            if (m := spec.rx("smi_process_row").match(line))]


def _compute_by_gpu(rows: list[tuple[int, str, str, str]]) -> dict[int, set[str]]:
    """PIDs of the compute (not graphics-only) processes per GPU index."""
    out: dict[int, set[str]] = defaultdict(set)
    for _, gpu, pid, kind in rows:
        if kind != "G":
            out[int(gpu)].add(pid)
    return out


def _idle_beside_busy(spec: FamilySpec, rows: list[tuple[int, int, int, int]],
                      procs: dict[int, set[str]] | None, facts: _Facts) -> None:
    """GPUs of one nvidia-smi table that do nothing (0% utilisation, and no process listed, or nearly no memory
    used when no process table was pasted) while others of the same table work: a launch that does not use every
    GPU (nvidia-smi docs: GPU-Util is the share of time a kernel ran; the Processes table lists each context)."""
    if len(rows) < 2:
        return
    share = float(spec.tables["idle_memory_share"])
    idle, busy = [], []
    for index, (_, used, total, util) in enumerate(rows):
        quiet = not procs.get(index) if procs else used <= share * total
        (idle if util == 0 and quiet else busy).append(index)
    if idle and busy:
        facts.add("nvidia-smi", "gpus_idle_beside_busy", len(idle), rows[idle[0]][0],
                  detail=f"GPU(s) {', '.join(map(str, idle))} at 0% with no process while GPU(s) "
                         f"{', '.join(map(str, busy))} work")


def _smi_csv(src: Source, spec: FamilySpec, facts: _Facts) -> None:
    header = spec.rx("smi_csv_header")
    for no, line in enumerate(src.lines, 1):
        if not header.match(line):
            continue
        cols = [c.strip().split(" [")[0] for c in line.split(",")]
        rows = []
        for nxt in src.lines[no:no + 1024]:
            cells = [c.strip() for c in nxt.split(",")]
            if len(cells) != len(cols):
                break
            rows.append(dict(zip(cols, cells, strict=True)))
        if rows:
            facts.add("nvidia-smi", "gpu_count", len(rows), no, detail=f"{len(rows)} GPUs in the query output")
            if rows[0].get("name"):
                facts.add("nvidia-smi", "gpu_model", rows[0]["name"], no + 1)
            used = [to_int(r.get("memory.used", "").split()[0]) for r in rows if r.get("memory.used")]
            if used and None not in used:
                facts.add("nvidia-smi", "gpu_memory_used_max_mib", max(u for u in used if u is not None), no + 1)
        return


def _profiler(src: Source, spec: FamilySpec, facts: _Facts, cap: int) -> None:
    rows = [(no, m.group("name").strip(), to_float(m.group("self_pct")) or 0.0) for no, line in enumerate(src.lines, 1)
            if (m := spec.rx("profiler_row").match(line))][:cap]
    if not rows:
        return
    comm = sum(p for _, n, p in rows if any(k in n for k in spec.tables["profiler_comm"]))
    data = sum(p for _, n, p in rows if any(k in n for k in spec.tables["profiler_data"]))
    no, top, pct = max(rows, key=lambda r: r[2])
    facts.add("profiler", "profiler_top_op", top, no, detail=f"{top} {pct}% of self CPU time")
    facts.add("profiler", "profiler_comm_share", round(comm / 100, 4), rows[0][0], detail=f"communication ops {comm:.1f}%")
    facts.add("profiler", "profiler_data_share", round(data / 100, 4), rows[0][0], detail=f"data-loading ops {data:.1f}%")


def _stacks(src: Source, spec: FamilySpec, facts: _Facts) -> None:
    thread, frame, gdb = spec.rx("pyspy_thread"), spec.rx("pyspy_frame"), spec.rx("gdb_frame")
    current: str | None = None
    threads = 0
    for no, line in enumerate(src.lines, 1):
        if (m := thread.match(line)):
            threads += 1  # py-spy lists the main thread first; older versions print no thread name
            current = m.group("name") or ("MainThread" if threads == 1 else "")
            continue
        if current == "MainThread" and (m := frame.match(line)):
            facts.add("py-spy", "main_thread_top", f"{m.group('func')} ({m.group('file')}:{m.group('line')})", no)
            current = None
        elif (m := gdb.match(line)) and m.group("n") == "0":
            facts.add("gdb", "native_top", m.group("func"), no, text=line.strip())


def parse(src: Source) -> list[SystemFact]:
    """Every system fact in ``src``."""
    spec = family("system")
    active = {p.name for p in spec.present(src.text)}
    if not active:
        return []
    facts = _Facts(src)
    _simple(src, spec, active, facts)
    if "topo_row" in active:
        _topology(src, spec, facts)
    _tables(src, spec, active, facts)
    _cuda_of_build(facts)
    _available_share(facts)
    _memory_growth(spec, facts)
    _benchmarks_without_results(src, spec, active, facts)
    _prereleases(spec, facts)
    return facts.items


def _memory_growth(spec: FamilySpec, facts: _Facts) -> None:
    """Used host memory that keeps growing over several ``free`` snapshots of one paste (free(1) in a loop):
    a trend, which one snapshot cannot show."""
    rule = spec.tables["host_mem_growth"]
    used = [f for f in facts.items if f.name == "host_mem_used"]
    values = [f.value for f in used]
    if len(values) < int(rule["min_snapshots"]) or not all(values):
        return
    tolerance = float(rule["tolerance"])
    rising = all(b >= a * (1 - tolerance) for a, b in pairwise(values))
    factor = values[-1] / values[0]
    if rising and factor >= float(rule["min_factor"]):
        facts.add("free", "host_mem_used_growth", round(factor, 2), facts.line_of(used[0]), text=used[0].text,
                  detail=f"used host memory grew {factor:.1f}x over {len(values)} snapshots of free "
                         f"({values[0] / 2**30:.1f} GiB -> {values[-1] / 2**30:.1f} GiB)")


def _benchmarks_without_results(src: Source, spec: FamilySpec, active: set[str], facts: _Facts) -> None:
    """GPU communication benchmarks that started and printed no result: nccl-tests' device table of two or more
    ranks with no result row and no average, or p2pBandwidthLatencyTest's banner without its closing note (the
    paste ends where the test stalled). The value is the number of hosts of the nccl-tests table (1 for the P2P sample)."""
    names = {f.name: f for f in facts.items}
    ranks = names.get("nccl_tests_ranks")
    done = {"nccl_busbw_large", "nccl_busbw_avg"} & set(names)
    if ranks is not None and ranks.value >= 2 and not done:
        hosts = names["nccl_tests_hosts"].value if "nccl_tests_hosts" in names else 1
        facts.add("nccl-tests", "gpu_benchmark_no_results", hosts, facts.line_of(ranks),
                  detail=f"nccl-tests listed {ranks.value} ranks on {hosts} host(s) and printed no result")
    if "p2p_test_header" not in active:
        return
    banner, closing = spec.rx("p2p_test_header"), spec.rx("p2p_test_done")
    no = next((i for i, line in enumerate(src.lines, 1) if banner.search(line)), None)
    if no is not None and not any(closing.search(line) for line in src.lines):
        facts.add("p2pBandwidthLatencyTest", "gpu_benchmark_no_results", 1, no,
                  detail="p2pBandwidthLatencyTest started and did not reach its closing note (a copy never completed)")


def _prereleases(spec: FamilySpec, facts: _Facts) -> None:
    """One fact naming the installed framework builds that are pre-releases or nightlies (PEP 440 dev/a/b/rc parts,
    a nightly date, a git local version): code that no release has shipped yet."""
    pattern = re.compile(spec.tables["prerelease_pattern"], re.IGNORECASE)
    wanted = set(spec.tables["prerelease_packages"])
    found = [f for f in facts.items if f.name in wanted and pattern.search(str(f.value))]
    if found:
        facts.add(found[0].tool, "prerelease_packages", len(found), facts.line_of(found[0]), text=found[0].text,
                  detail=", ".join(f"{f.name.removesuffix('_version')} {f.value}" for f in found))


def _available_share(facts: _Facts) -> None:
    """The share of host RAM still available on a ``free`` line (its total and available columns, free(1))."""
    totals = {f.provenance.line: f for f in facts.items if f.name == "host_mem_total" and f.value}
    for f in list(facts.items):
        if f.name == "host_mem_available" and (t := totals.get(f.provenance.line)) is not None:
            share = round(f.value / t.value, 4)
            facts.add("free", "host_mem_available_share", share, facts.line_of(f),
                      detail=f"{share:.1%} of host memory available", text=f.text)
            return


def _cuda_of_build(facts: _Facts) -> None:
    """The CUDA a torch wheel was built with, from its local version (``2.3.1+cu121`` -> 12.1), where the paste
    does not state it (pip list, conda list; collect_env prints "CUDA used to build PyTorch")."""
    if any(f.name == "cuda_build" for f in facts.items):
        return
    for f in list(facts.items):
        if f.name == "torch_version" and "+cu" in str(f.value):  # not a signature
            digits = str(f.value).split("+cu", 1)[1]
            digits = digits[:len(digits) - len(digits.lstrip("0123456789"))] if digits[:1].isdigit() else ""
            if len(digits) >= 2:
                facts.add(f.tool, "cuda_build", f"{digits[:-1]}.{digits[-1]}", facts.line_of(f), text=f.text)
                return
