"""What a pasted training script shows about distributed training -> CodeFact evidence.

Where ``launch_code`` reads the launch contract a script hard-codes, this reader follows its blocks (by
indentation) to find the patterns the libraries' documentation names as causes: a collective or a DDP forward
that only one rank reaches (inside ``if rank == 0:``), ``torch.load`` without ``map_location``, a
DistributedSampler never given its epoch, BatchNorm under DDP with no SyncBatchNorm, models put on "cuda" with no
per-process device, hand-written gradient accumulation that all-reduces every micro-batch, a training DataLoader
that loads in the main process, a seed offset by the rank (with a split the script draws itself). Patterns and
word lists are data (``rules/artifacts/code_facts.yaml``).

Code is text: never executed or imported. One pass over the lines; comments and docstrings are skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from diagnose.evidence import CodeFact
from diagnose.probes.artifacts.launch_code import in_string, indented_lines, joined_call
from diagnose.probes.artifacts.source import Source
from diagnose.probes.artifacts.spec import FamilySpec, family

__all__ = ["parse"]

_FIRSTS = ("distributed_sampler", "batchnorm_built", "cuda_default", "accumulation_step", "epoch_loop",
           "seed_per_rank", "data_split", "generate_call", "nccl_group_init")  # first line each


@dataclass
class _Guard:
    indent: int
    cond: str
    one_rank: str | None  # "rank0" (only rank 0 / one rank) or "others" (every rank but it); None: no rank test


@dataclass
class _Seen:
    """What one pass over the script found."""

    collectives: list[tuple[int, str, _Guard]] = field(default_factory=list)
    forwards: list[tuple[int, str, _Guard]] = field(default_factory=list)
    first: dict[str, tuple[int, str]] = field(default_factory=dict)  # pattern name -> (line, code) of its first hit
    loads_without_map: list[tuple[int, str]] = field(default_factory=list)


def _hit(spec: FamilySpec, name: str, line: str) -> bool:
    """Whether pattern ``name`` matches ``line``, its regex tried only where one of its ``needs`` strings occurs."""
    pattern = spec.by_name[name]
    return any(n in line for n in pattern.needs) and pattern.compiled.search(line) is not None


def _one_rank(cond: str, spec: FamilySpec) -> str | None:
    """``rank0`` when ``cond`` holds on rank 0 only, ``others`` when on every rank but rank 0, else None."""
    m = spec.rx("rank_test").search(cond)
    if m is None:
        return None
    if m.group("flag"):
        negated = bool(m.group("neg")) or cond.lstrip().startswith("not ")
        return "others" if negated else "rank0"
    op = " ".join(m.group("op").split())
    values = {int(v) for v in m.group("val").strip("[]() ").replace(" ", "").split(",") if v.lstrip("-").isdigit()}
    if not values or values <= {-1}:  # local_rank != -1: "running distributed", true on every rank
        return None
    if op == "<" and values != {1}:  # rank < 2: two ranks, not one
        return None
    one = "rank0" if op in ("==", "in", "<", "<=") else "others"
    return "others" if one == "rank0" and cond.lstrip().startswith("not ") else one


def _statement(seen: _Seen, no: int, line: str, guard: _Guard | None, ddp_vars: set[str], spec: FamilySpec) -> None:
    """Record what one statement (a line, or the code after an ``if ...:`` on its line) shows."""
    if guard is not None:
        _guarded(seen, no, line, guard, ddp_vars, spec)
    if _hit(spec, "ddp_assign", line) and (m := spec.rx("ddp_assign").search(line)):
        ddp_vars.add(m.group("var"))


def _guarded(seen: _Seen, no: int, line: str, guard: _Guard, ddp_vars: set[str], spec: FamilySpec) -> None:
    """A collective (outside a string literal), else a call of a DDP-wrapped model, in a one-rank branch."""
    if _hit(spec, "collective_call", line):
        m = next((m for m in spec.rx("collective_call").finditer(line) if not in_string(line, m.start())), None)
        if m is not None:
            seen.collectives.append((no, m.group("op") or m.group("wrapped") or m.group("saving") or m.group("bare"),
                                    guard))
        return
    for var in ddp_vars:
        at = line.find(var + "(")
        if at >= 0 and (at == 0 or not (line[at - 1].isalnum() or line[at - 1] in "._")):
            seen.forwards.append((no, var, guard))
            return


def _loader(seen: _Seen, no: int, call: str, spec: FamilySpec) -> None:
    """The first training DataLoader (one no evaluation word names), and whether it loads in the main process."""
    if any(w in call.lower() for w in spec.tables["eval_loader_words"]):
        return
    seen.first["loader"] = (no, call)
    m = spec.rx("loader_workers").search(call)
    if m is None or m.group("value") == "0":
        seen.first["loader_in_main_process"] = (no, call)


def _scan(lines: list[tuple[int, int, str]], spec: FamilySpec) -> _Seen:
    seen = _Seen()
    stack: list[_Guard] = []
    last_at: dict[int, _Guard] = {}  # the last if/elif seen at each indentation (what an else negates)
    ddp_vars: set[str] = set()
    depth = int(spec.tables["max_guard_depth"])
    pairs = [(no, line) for no, _, line in lines]  # what joined_call reads a call spanning lines from
    for i, (no, indent, line) in enumerate(lines):
        while stack and stack[-1].indent >= indent:
            stack.pop()
        guard = next((g for g in reversed(stack) if g.one_rank), None)
        for name in _FIRSTS:
            if name not in seen.first and _hit(spec, name, line):
                seen.first[name] = (no, line)
        if "torch.load(" in line and "map_location" not in joined_call(pairs, i, line.find("torch.load("), spec):
            seen.loads_without_map.append((no, line))
        if "loader" not in seen.first and "DataLoader(" in line and (m := spec.rx("loader_call").search(line)):
            _loader(seen, no, line[: m.start()] + joined_call(pairs, i, m.start(), spec), spec)
        m = spec.rx("branch").match(line)
        if m is None:
            _statement(seen, no, line, guard, ddp_vars, spec)
            continue
        if m.group("kw") == "else":
            before = last_at.get(indent)
            flipped = {"rank0": "others", "others": "rank0"}.get(before.one_rank or "") if before else None
            new = _Guard(indent, f"not ({before.cond.strip()})" if before else "else", flipped)
        else:
            new = _Guard(indent, m.group("cond").strip(), _one_rank(m.group("cond"), spec))
            last_at[indent] = new
        if len(stack) < depth:
            stack.append(new)
        if rest := m.group("rest").strip():  # "if rank == 0: dist.barrier()" on one line
            _statement(seen, no, rest, new if new.one_rank else guard, ddp_vars, spec)
    return seen


def parse(src: Source) -> list[CodeFact]:
    """The distributed-training patterns a pasted script shows, one CodeFact each, at the line that shows it."""
    spec = family("code_facts")
    text = src.text
    tables = spec.tables
    if not any(w in text for w in tables["distributed_words"]) or not spec.multiline["python_line"].search(text):
        return []
    seen = _scan(indented_lines(src), spec)
    out: list[CodeFact] = []

    def fact(name: str, no: int, call: str, guard: str | None = None) -> None:
        out.append(CodeFact(fact=name, call=call[:300], guard=guard and guard[:200], provenance=src.prov(no),
                            rank=src.rank, text=call[:500]))

    # a barrier on rank 0 paired with a barrier on the others (the "main process first" idiom) is no mismatch
    barriers = set(tables["barrier_calls"])
    sides = {g.one_rank for _, op, g in seen.collectives if op in barriers}
    kept = [c for c in seen.collectives if not (c[1] in barriers and sides >= {"rank0", "others"})]
    for no, op, guard in kept[:3]:
        fact("collective_under_rank_guard", no, op, guard.cond)
    for no, var, guard in seen.forwards[:1]:
        fact("ddp_forward_under_rank_guard", no, f"{var}(...)", guard.cond)
    ddp = any(w in text for w in tables["ddp_words"])
    for no, line in seen.loads_without_map[:1]:
        fact("load_without_map_location", no, line)
    library_loop = any(w in text for w in tables["epoch_setting_loops"])
    if "distributed_sampler" in seen.first and "epoch_loop" in seen.first and ".set_epoch(" not in text \
            and not library_loop:
        fact("sampler_without_set_epoch", *seen.first["distributed_sampler"])
    if ddp and "batchnorm_built" in seen.first and not any(w in text for w in tables["sync_batchnorm_words"]):
        fact("batchnorm_without_sync", *seen.first["batchnorm_built"])
    sharded = any(w in text for w in tables["fsdp_words"])
    # .cuda() / "cuda" on the current device, or an NCCL group (its communicator and barrier use the current device,
    # cuda:0 until set_device: pytorch/pytorch:torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp, barrier), in a
    # distributed script that never selects a device per process
    if ("init_process_group" in text or ddp or sharded) and not any(w in text for w in tables["device_binding_words"]):
        if "cuda_default" in seen.first:
            fact("cuda_without_device_binding", *seen.first["cuda_default"])
        elif "nccl_group_init" in seen.first:
            fact("nccl_group_without_device_binding", *seen.first["nccl_group_init"])
    if "seed_per_rank" in seen.first:  # with a split or shuffle the script draws itself, the data differs per rank
        no, line = seen.first["seed_per_rank"]
        fact("seed_per_rank_before_split" if "data_split" in seen.first else "seed_per_rank", no, line)
    if "loader_in_main_process" in seen.first:
        fact("loader_without_workers", *seen.first["loader_in_main_process"])
    if ddp and "accumulation_step" in seen.first and any(w in text for w in tables["backward_words"]) \
            and not any(w in text for w in tables["no_sync_words"]):
        fact("accumulation_without_no_sync", *seen.first["accumulation_step"])
    if "generate_call" in seen.first and "synced_gpus" not in text \
            and (sharded or any(w in text for w in tables["zero_words"])):
        fact("sharded_generate_without_synced_gpus", *seen.first["generate_call"])
    return out
