"""Training configs -> ConfigSetting evidence: DeepSpeed JSON, Accelerate, Lightning/Hydra and torchtune YAML,
printed HF TrainingArguments. Formats and key maps are data (``rules/artifacts/configs.yaml``).

Untrusted input: YAML goes through a safe loader that refuses more than a few aliases (no expansion
bombs) and deep nesting; JSON and YAML documents are size-capped and walked with a node budget; what
cannot be parsed is skipped with a note.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from diagnose.evidence import ConfigSetting
from diagnose.probes.artifacts.source import Source, to_bool, to_float, to_int
from diagnose.probes.artifacts.spec import FamilySpec, family, strings_in

__all__ = ["parse", "safe_yaml", "safe_json", "flatten"]

_INT = ("local_batch", "global_batch", "accumulation", "zero_stage", "num_workers", "log_every", "num_processes",
        "num_machines", "world_size")
_FLOAT = ("lr", "warmup", "reduce_bucket_size", "allgather_bucket_size")
_BOOL = ("overlap_comm", "sync_batchnorm")
_STR = ("offload_optimizer", "offload_param", "fsdp_wrap", "fsdp_state_dict_type", "distributed_type", "precision",
        "master_addr")


class ParseRefused(ValueError):
    """A document over a limit (size, depth, aliases)."""


class _BoundedLoader(yaml.SafeLoader):
    """SafeLoader that counts aliases and nesting while composing (before anything is built)."""

    limits = (64, 32)

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:  # noqa: D102 - PyYAML hook
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > self.limits[0]:
                raise ParseRefused(f"more than {self.limits[0]} YAML aliases")
        self._depth += 1
        if self._depth > self.limits[1]:
            raise ParseRefused(f"YAML nested deeper than {self.limits[1]}")
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _limits(spec: FamilySpec) -> tuple[int, int, int, int]:
    t = spec.tables
    return int(t["max_bytes"]), int(t["max_depth"]), int(t["max_aliases"]), int(t["max_nodes"])


def safe_yaml(text: str, spec: FamilySpec | None = None) -> Any:
    """One YAML document, safely: size, alias and depth limits; raises ParseRefused or yaml.YAMLError."""
    max_bytes, depth, aliases, _ = _limits(spec or family("configs"))
    if len(text) > max_bytes:
        raise ParseRefused(f"over {max_bytes} bytes")
    if "&" not in text and text.count("[") + text.count("{") < depth and max(_indents(text), default=0) < 2 * depth:
        # no anchors, so no aliases, and shallow: the C loader is safe and much faster
        return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506 - a safe loader
    loader = type("Bounded", (_BoundedLoader,), {"limits": (aliases, depth)})(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def _indents(text: str) -> list[int]:
    return [len(line) - len(line.lstrip(" ")) for line in text.splitlines()[:5000]]


def safe_json(text: str, spec: FamilySpec | None = None) -> Any:
    """One JSON document with size and depth limits; raises ParseRefused or ValueError."""
    max_bytes, depth, _, _ = _limits(spec or family("configs"))
    if len(text) > max_bytes:
        raise ParseRefused(f"over {max_bytes} bytes")
    try:
        return json.loads(text)
    except RecursionError:
        raise ParseRefused(f"JSON nested deeper than {depth}") from None


def flatten(data: Any, spec: FamilySpec | None = None) -> dict[str, Any]:
    """Dotted key paths of the scalars in a mapping, within the node and depth budgets; a list of scalars gives its
    items, comma-joined, as ``path[]`` (OpenNMT's gpu_ranks: the ranks a node starts), other lists are skipped."""
    _, depth, _, budget = _limits(spec or family("configs"))
    out: dict[str, Any] = {}
    stack: list[tuple[str, Any, int]] = [("", data, 0)]
    seen = 0
    while stack and seen < budget:
        prefix, node, level = stack.pop()
        seen += 1
        if isinstance(node, dict) and level < depth:
            for key, val in list(node.items())[:budget]:
                stack.append((f"{prefix}.{key}" if prefix else str(key), val, level + 1))
        elif isinstance(node, (str, int, float, bool)) and prefix:
            out[prefix] = node
        elif isinstance(node, list) and prefix and all(isinstance(v, (str, int, float)) for v in node[:budget]):
            out[f"{prefix}[]"] = ",".join(str(v) for v in node[:64])
    return out


def _format_of(flat: dict[str, Any], spec: FamilySpec) -> str | None:
    best, score = None, 0
    for name, fmt in spec.tables["formats"].items():
        hits = sum(1 for m in fmt["markers"] if m in flat or any(k.startswith(m + ".") for k in flat))
        if hits >= fmt.get("min_markers", 1) and hits > score:
            best, score = name, hits
    return best


def _setting(flat: dict[str, Any], fmt: str, src: Source, line: int | None, spec: FamilySpec) -> ConfigSetting:
    keys = spec.tables["formats"][fmt]["keys"]
    raw: dict[str, Any] = {}
    for path, field in keys.items():
        if path in flat and field not in raw:
            raw[field] = flat[path]
    fields: dict[str, Any] = {}
    for key in _INT:
        if key in raw and (n := to_int(raw[key])) is not None:
            fields[key] = n
    for key in _FLOAT:
        if key in raw and (x := to_float(raw[key])) is not None:
            fields[key] = x
    for key in _STR:
        if key in raw and not isinstance(raw[key], bool) and str(raw[key]).strip():
            fields[key] = str(raw[key]).strip()[:120]
    for key in ("offload_optimizer", "offload_param"):
        if isinstance(raw.get(key), bool):
            fields[key] = "cpu" if raw[key] else "none"
    for prec in ("fp16", "bf16"):
        if to_bool(raw.get(f"precision_{prec}")):
            fields["precision"] = prec
    for key in _BOOL:
        if key in raw:
            fields[key] = to_bool(raw[key])
    if "node_ranks" in raw and (ranks := _ranks(raw["node_ranks"])):
        fields["node_ranks"], fields["num_processes"] = ranks, len(ranks)
    if fmt == "hf_training_args" and fields.get("distributed_type") in ("None", "none", ""):
        fields.pop("distributed_type")
    settings = {k: v if isinstance(v, (int, float, bool)) else str(v)[:120] for k, v in raw.items()}
    text = ", ".join(f"{k}={v}" for k, v in settings.items())[:500] or fmt
    return ConfigSetting(format=fmt, provenance=src.prov(line), rank=src.rank, text=text, settings=settings, **fields)


def _ranks(value: Any) -> tuple[int, ...]:
    """'0,1,2,4' or '0 1' (or one number) as ranks; () when any item is not a small whole number."""
    items = str(value).replace(",", " ").split()
    return tuple(int(i) for i in items) if items and all(i.isdigit() and len(i) < 5 for i in items) else ()


def _rank_flags(src: Source, spec: FamilySpec) -> list[ConfigSetting]:
    """Command lines with OpenNMT-style ``-gpu_ranks`` flags (OpenNMT-py and the projects built on it): one
    ConfigSetting per line, read with the ``opennmt_flags`` format's keys."""
    out = []
    for no, line in enumerate(src.lines, 1):
        if "gpu_ranks" in line:
            flat = {m.group("flag"): m.group("value") for m in spec.rx("flag_value").finditer(line)}
            if "gpu_ranks" in flat:
                out.append(_setting(flat, "opennmt_flags", src, no, spec))
    return out


def _document(text: str, spec: FamilySpec) -> Any:
    stripped = text.lstrip()
    if stripped[:1] in "{[":
        return safe_json(text, spec)
    return safe_yaml(text, spec)


def _blocks(src: Source, spec: FamilySpec) -> list[tuple[int, str]]:
    """Runs of YAML-looking lines in a mixed paste, with their first line: at least three, or two inside a Markdown
    code fence (a fence says the lines are code, not prose that happens to hold a colon)."""
    rx = spec.rx("yaml_line")
    out, start, buf = [], 0, []
    for no, line in enumerate([*src.lines, "\x00"], 1):
        if line != "\x00" and rx.match(line):
            if not buf:
                start = no
            buf.append(line)
            continue
        if buf:
            fenced = start >= 2 and src.lines[start - 2].lstrip().startswith("```") and line.lstrip().startswith("```")
            if len([b for b in buf if b.strip()]) >= (2 if fenced else 3):
                out.append((start, "\n".join(buf)))
            buf = []
    return out


def _first_key_line(src: Source, start: int, flat: dict[str, Any]) -> int:
    """Line of the document's first key (a pasted config may follow prose that YAML also accepts)."""
    heads = {k.split(".")[0] for k in flat}
    for no, line in enumerate(src.lines[start - 1:], start):
        key = line.strip().lstrip("{").strip().strip('"').split('"')[0].split(":")[0]
        if key in heads and not line.startswith((" ", "\t")) and len(key) < 64 and key.replace("_", "").isalnum():
            return no
    return start


def _heads(spec: FamilySpec) -> set[str]:
    return {m.split(".")[0].removesuffix("[]") for fmt in spec.tables["formats"].values() for m in fmt["markers"]}


_KEYS: dict[int, tuple[str, ...]] = {}


def _head_keys(spec: FamilySpec) -> tuple[str, ...]:
    if id(spec) not in _KEYS:
        _KEYS[id(spec)] = tuple(sorted(k for h in _heads(spec) for k in (f"\n{h}:", f"\n{h}=", f'"{h}"')))
    return _KEYS[id(spec)]


def _markers_present(text: str, spec: FamilySpec) -> bool:
    """A marker key starts a line (YAML, ``key=`` dumps) or is quoted (JSON): a cheap gate before any parse."""
    return bool(strings_in("\n" + text, _head_keys(spec)))


def _kv_dump(src: Source, spec: FamilySpec) -> list[ConfigSetting]:
    out = []
    head, kv = spec.rx("dataclass_head"), spec.rx("kv_line")
    i = 0
    while i < len(src.lines):
        if "(" in src.lines[i] and head.match(src.lines[i]):
            flat: dict[str, Any] = {}
            start = i + 1
            i += 1
            while i < len(src.lines) and (m := kv.match(src.lines[i])):
                flat[m.group("key")] = m.group("value").strip()
                i += 1
            if (fmt := _format_of(flat, spec)) is not None:
                out.append(_setting(flat, fmt, src, start, spec))
        i += 1
    return out


def parse(src: Source) -> list[ConfigSetting]:
    """Every config in ``src``: the whole file as one document, else the YAML blocks of a mixed paste."""
    spec = family("configs")
    flags = _rank_flags(src, spec) if "gpu_ranks" in src.text else []
    if not _markers_present(src.text, spec):
        return flags
    out = flags + (_kv_dump(src, spec) if "(" in src.text else [])
    candidates = [(1, src.text)] if len(src.text) <= int(spec.tables["max_bytes"]) else []
    heads = _heads(spec)
    blocks = [(n, b) for n, b in _blocks(src, spec) if any(f"\n{h}:" in "\n" + b for h in heads)]
    for line, text in candidates + blocks:
        try:
            data = _document(text, spec)
        except ParseRefused as exc:
            src.notes.append(f"{src.path}:{line}: config not read: {exc}")
            continue
        except (yaml.YAMLError, ValueError, TypeError):
            continue
        if not isinstance(data, dict):
            continue
        flat = flatten(data, spec)
        fmt = _format_of(flat, spec)
        if fmt is not None:
            out.append(_setting(flat, fmt, src, _first_key_line(src, line, flat), spec))
            break  # the whole document (or its first config block) is the config
    return out
