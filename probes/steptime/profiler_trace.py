"""torch.profiler Chrome traces as StepMetric evidence, one per ``ProfilerStep#N``.

Within each step window the trace's events are split into the terms of the step-time
model: data loading (``DataLoader.__next__``), communication (gloo / NCCL / c10d
collectives, NCCL kernels), host-device syncs (``cudaStreamSynchronize``,
``aten::item``) and compute (GPU kernels when the trace has any, else CPU ops),
each as the measure of the union of its intervals. Event classes come from the
``trace:`` section of ``rules/signatures/steptime.yaml``. Needs no torch.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

from diagnose.evidence import Provenance, StepMetric
from diagnose.probes.steptime.spec import StepSpec, steptime_spec

__all__ = ["parse_profiler_trace", "load_trace"]

MAX_TRACE_BYTES = 2 << 30
Interval = tuple[float, float]


def load_trace(path: Path) -> dict[str, Any]:
    """The trace object of a Chrome-trace JSON file (plain or gzip); raises ValueError if it is not one."""
    path = Path(path)
    if path.stat().st_size > MAX_TRACE_BYTES:
        raise ValueError(f"trace larger than {MAX_TRACE_BYTES} bytes")
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a JSON trace: {exc}") from None
    if isinstance(data, list):
        data = {"traceEvents": data}
    if not isinstance(data, dict) or not isinstance(data.get("traceEvents"), list):
        raise ValueError("no traceEvents list")
    return data


def parse_profiler_trace(path: Path, run: str | None = None) -> list[StepMetric]:
    """One StepMetric per profiler step of the trace at ``path`` (seconds per term)."""
    data = load_trace(Path(path))
    spec = steptime_spec()
    events = [e for e in data["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"
              and isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur"), (int, float))]
    info = data.get("distributedInfo") if isinstance(data.get("distributedInfo"), dict) else {}
    rank = info.get("rank") if isinstance(info.get("rank"), int) else None
    world = info.get("world_size") if isinstance(info.get("world_size"), int) else None
    classes = _classify(events, spec)
    steps = sorted((e for e in events if spec.trace["step"].match(str(e.get("name", "")))),
                   key=lambda e: e["ts"])
    label = run or str(Path(path).parent)
    out = []
    for ev in steps:
        window = (float(ev["ts"]), float(ev["ts"]) + float(ev["dur"]))
        terms = {k: _measure(v, window) for k, v in classes.items()}
        busy = _measure(classes["data"] + classes["comm"] + classes["sync"], window)
        compute = _measure(classes["compute"] + classes["data"] + classes["comm"] + classes["sync"], window) - busy
        step_no = spec.trace["step"].match(str(ev["name"]))
        out.append(StepMetric(
            run=label, rank=rank, world_size=world, step=int(step_no.group("n")) if step_no else None,
            step_time=window[1] / 1e6 - window[0] / 1e6, data_time=terms["data"] / 1e6,
            comm_time=terms["comm"] / 1e6, sync_time=terms["sync"] / 1e6, compute_time=compute / 1e6,
            provenance=Provenance(probe="profiler_trace", source=str(path)),
            text=(f"{ev['name']}: step {window[1] / 1e3 - window[0] / 1e3:.2f} ms, data {terms['data'] / 1e3:.2f} ms, "
                  f"comm {terms['comm'] / 1e3:.2f} ms, compute {compute / 1e3:.2f} ms, sync {terms['sync'] / 1e3:.2f} ms"),
        ))
    return out


def _classify(events: list[dict[str, Any]], spec: StepSpec) -> dict[str, list[Interval]]:
    tr = spec.trace
    has_gpu = any(tr["gpu_categories"].match(str(e.get("cat", ""))) for e in events)
    out: dict[str, list[Interval]] = {"data": [], "comm": [], "sync": [], "compute": []}
    for e in events:
        name, cat = str(e.get("name", "")), str(e.get("cat", ""))
        span = (float(e["ts"]), float(e["ts"]) + float(e["dur"]))
        if tr["data"].search(name):
            out["data"].append(span)
        elif tr["comm"].search(name):
            out["comm"].append(span)
        elif tr["sync"].search(name):
            out["sync"].append(span)
        elif tr["compute_categories"].match(cat) and (not has_gpu or tr["gpu_categories"].match(cat)):
            out["compute"].append(span)
    return out


def _measure(spans: list[Interval], window: Interval) -> float:
    """Length of the union of ``spans`` clipped to ``window``."""
    lo, hi = window
    clipped = sorted((max(a, lo), min(b, hi)) for a, b in spans if b > lo and a < hi)
    total, cur_a, cur_b = 0.0, None, None
    for a, b in clipped:
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        else:
            cur_b = max(cur_b, b)
    if cur_b is not None:
        total += cur_b - cur_a
    return total
