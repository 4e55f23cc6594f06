"""A pasted training script's share of the launch contract -> LaunchSpec evidence (launcher ``code``).

What a script hard-codes: init_process_group's ``rank=`` and ``world_size=``, the expression a CUDA device
index comes from (``set_device``, ``cuda:{...}``, ``device_ids=[...]``) and whether it is a per-node index,
``DataParallel`` without a distributed wrapper, a shuffling DataLoader without a sharding sampler under DDP.
Patterns and word lists are data (``rules/artifacts/launch_code.yaml``).

Code is text: never executed or imported. One pass over the lines; comments and docstrings are skipped; a
call spanning lines is joined up to a bounded number of lines; every pattern is linear (bounded classes).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from diagnose.evidence import LaunchSpec
from diagnose.probes.artifacts.source import Source, to_int
from diagnose.probes.artifacts.spec import FamilySpec, family, strings_in

__all__ = ["parse", "code_lines", "indented_lines", "scope", "in_string", "joined_call"]

_PROMPTS = (">>> ", "... ")
_CALLS_PER_LINE = 4  # calls read on one line (a line of a real script holds one or two)


def _quotes(line: str) -> Iterator[tuple[int, str, bool]]:
    """(position, character, whether it lies inside a string literal) of each character of ``line``."""
    quote = ""
    for i, ch in enumerate(line):
        yield i, ch, bool(quote)
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch


def _strip_comment(line: str) -> str:
    """``line`` up to a ``#`` that is outside a string (one linear scan)."""
    return next((line[:i] for i, ch, quoted in _quotes(line) if ch == "#" and not quoted), line)


def in_string(line: str, pos: int) -> bool:
    """Whether ``pos`` of ``line`` lies inside a string literal (one linear scan up to it)."""
    return next((quoted for i, _, quoted in _quotes(line) if i == pos), False)


def indented_lines(src: Source) -> list[tuple[int, int, str]]:
    """(line number, indentation, code) of every line that is code: comments, docstrings and blank lines left out
    (the indentation counts a tab as four columns: which block a line belongs to)."""
    out: list[tuple[int, int, str]] = []
    in_doc = ""
    for no, raw in enumerate(src.lines, 1):
        line = raw.strip()
        if line.startswith(_PROMPTS):
            line = line[4:]
        if in_doc:
            if in_doc in line:  # the docstring closes here; the rest of its line is not read
                in_doc = ""
            continue
        for q in ('"""', "'''"):
            if q in line:
                if line.count(q) % 2:
                    in_doc = q
                line = line.split(q, 1)[0]
                break
        line = _strip_comment(line).strip() if "#" in line else line
        if line:
            wide = raw.expandtabs(4)
            out.append((no, len(wide) - len(wide.lstrip()), line))
    return out


def code_lines(src: Source) -> list[tuple[int, str]]:
    """(line number, code) of every line that is code: comments, docstrings and blank lines left out."""
    return [(no, line) for no, _, line in indented_lines(src)]


def scope(expr: str, spec: FamilySpec) -> str | None:
    """``local`` when ``expr`` is a per-node index, ``global`` when it is the global rank, else None."""
    if any(w in expr for w in spec.tables["local_words"]):
        return "local"
    words = {w.strip("()[]\"'") for w in expr.replace(".", " ").replace("(", " ").replace("[", " ").split()}
    return "global" if words & set(spec.tables["global_words"]) else None


def joined_call(lines: list[tuple[int, str]], i: int, start: int, spec: FamilySpec) -> str:
    """The call opening at ``start`` of line ``i``, joined over the next lines until its parentheses close."""
    text = lines[i][1][start:]
    depth = text.count("(") - text.count(")")
    j = i + 1
    limit = int(spec.tables["max_call_lines"])
    while depth > 0 and j < len(lines) and j - i < limit and len(text) < int(spec.tables["max_call_chars"]):
        text += " " + lines[j][1]
        depth += lines[j][1].count("(") - lines[j][1].count(")")
        j += 1
    return text[: int(spec.tables["max_call_chars"])]


def _kwargs(call: str, spec: FamilySpec) -> dict[str, str]:
    """Keyword arguments of the outermost call in ``call`` (the first of each name)."""
    out: dict[str, str] = {}
    for m in spec.rx("kwarg").finditer(call):
        out.setdefault(m.group("key"), m.group("value").strip())
    return out


def _first_arg(call: str) -> str:
    body = call.split("(", 1)[-1]
    depth, end = 0, len(body)
    for k, ch in enumerate(body):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            if depth == 0:
                end = k
                break
            depth -= 1
        elif ch == "," and depth == 0:
            end = k
            break
    return body[:end].strip()


def parse(src: Source) -> list[LaunchSpec]:
    """The launch-contract facts a training script states, one LaunchSpec per fact, each at its line."""
    spec = family("launch_code")
    present = strings_in(src.text, spec.needles)
    if not present & {
        "init_process_group",
        "set_device",
        "DataParallel",
        "DataLoader",
        "Trainer(",
        "cuda:",
        'cuda"',
        "cuda'",
    }:
        return []
    lines = code_lines(src)
    found: dict[str, Any] = {}
    ddp = shard = own_shard = False
    loaders: list[tuple[int, dict[str, str]]] = []
    for i, (no, line) in enumerate(lines):
        ddp = (
            ddp
            or ("DDP(" in line or "Parallel(" in line or "fully_shard" in line)
            and bool(spec.rx("ddp_named").search(line))
        )
        shard = shard or bool(spec.rx("shard_sampler").search(line))
        own_shard = own_shard or bool(spec.rx("own_shard_sampler").search(line))
        for k, m in enumerate(spec.rx("call_start").finditer(line)):
            if k >= _CALLS_PER_LINE or in_string(line, m.start()):
                continue
            call = m.group("call")
            text = joined_call(lines, i, m.start(), spec)
            if call == "init_process_group" and "init" not in found:
                kw = _kwargs(text, spec)
                if "rank" in kw or "world_size" in kw:
                    found["init"] = (no, kw, text)
            elif call == "set_device":
                _device(found, no, _first_arg(text), text, spec)
            elif call == "DistributedDataParallel":
                ids = _kwargs(text, spec).get("device_ids", "")
                if ids.startswith("["):
                    _device(found, no, _first_arg("(" + ids[1:]), text, spec)
            elif call == "DataParallel" and "dp" not in found:
                found["dp"] = (no, text)
            elif call == "Trainer" and "trainer" not in found:
                kw = _kwargs(text, spec)
                devices = kw.get("devices", kw.get("gpus", ""))
                flag = next((f"{k}={kw[k]}" for k in ("use_distributed_sampler", "replace_sampler_ddp") if k in kw), None)
                if devices.isdigit() or kw.get("num_nodes", "").isdigit() or flag:
                    found["trainer"] = (
                        no,
                        to_int(devices) if devices.isdigit() else None,
                        to_int(kw["num_nodes"]) if kw.get("num_nodes", "").isdigit() else None,
                        text,
                        flag,
                    )
            elif call == "DataLoader":
                loaders.append((no, _kwargs(text, spec)))
        if "cuda" in line and (m := spec.rx("device_string").search(line)):
            _device(found, no, m.group("fmt") or m.group("cat") or m.group("arg") or "", line, spec)
    out: list[LaunchSpec] = []

    def spec_at(no: int, text: str, **fields: Any) -> None:
        out.append(LaunchSpec(launcher="code", provenance=src.prov(no), rank=src.rank, text=text[:500], **fields))

    if "init" in found and (
        found["init"][1].get("rank", "").isdigit()
        or found["init"][1].get("world_size", "").isdigit()
        or scope(found["init"][1].get("rank", ""), spec) == "local"
    ):
        no, kw, text = found["init"]
        spec_at(no, text,
                world_size=to_int(kw.get("world_size", "")) if kw.get("world_size", "").isdigit() else None,
                code_rank=kw.get("rank"), rank_scope=scope(kw["rank"], spec) if "rank" in kw else None)
    if "device" in found and found["device"][2] == "global":
        no, expr, where, text = found["device"]
        spec_at(no, text, device_index=expr, device_scope=where)
    if "trainer" in found:  # Lightning's Trainer(devices=, num_nodes=): processes per node and nodes
        no, devices, nodes, text, flag = found["trainer"]
        # use_distributed_sampler / replace_sampler_ddp as written; "own" when the script builds a sharding sampler
        sampler = None if flag is None else (f"{flag}, own" if own_shard else flag)
        spec_at(no, text, wrapper="lightning", procs_per_node=devices, nodes=nodes, loader_sampler=sampler)
    if "dp" in found and not ddp:
        no, text = found["dp"]
        spec_at(no, text, wrapper="DataParallel")
    if ddp and not shard:
        for no, kw in loaders:
            if kw.get("shuffle") == "True" and "sampler" not in kw and "batch_sampler" not in kw:
                spec_at(no, f"DataLoader(..., shuffle=True) with no sampler at line {no}",
                        loader_sampler="none", wrapper="DistributedDataParallel")
                break
    return out


def _device(found: dict[str, Any], no: int, expr: str, text: str, spec: FamilySpec) -> None:
    """Keep the first device expression, or the first global one over a local or unknown one."""
    expr = expr.strip()
    if not expr or len(expr) > 120:
        return
    where = scope(expr, spec)
    if "device" not in found or (where == "global" and found["device"][2] != "global"):
        found["device"] = (no, expr, where, text)
