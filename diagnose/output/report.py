"""The report model: what every command prints, as text or as versioned JSON."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from diagnose.evidence import Evidence

SCHEMA_ID = "diagnose.report/1"


def tidy(text: str) -> str:
    """Drop what a message says when a value is unknown: 'rank(s) none', a bare None, '#?', doubled words."""
    words = text.split(" ")
    out: list[str] = []
    for word in words:
        bare = word.rstrip(",.;:)")
        if bare in ("#?", "?") and out:
            continue
        if bare in ("None", "null") and out:
            word = word.replace(bare, "unknown", 1)
        if out and word and out[-1].lower() == word.lower() and word.isalpha():
            continue  # "barrier barrier"
        out.append(word)
    text = " ".join(out)
    for phrase in ("rank(s) none", "ranks none", "rank none", "rank(s) unknown"):
        text = text.replace(phrase, "an unknown rank")
    return text


class EvidenceRef(BaseModel):
    """One cited piece of evidence: where it is and what it says."""

    model_config = ConfigDict(frozen=True)

    source: str | None = Field(None, description="file or live source")
    line: int | None = Field(None, description="1-based line number")
    rank: int | None = None
    host: str | None = None
    text: str = Field("", description="the line or summary itself")
    time: float | None = Field(None, description="seconds since the epoch, when the source says")


class Cause(BaseModel):
    """A ranked likely cause with its culprits, evidence and first fix."""

    id: str = Field(description="cause id from CAUSES.md (or a finer id that names what it refines)")
    refines: str | None = None
    score: float = Field(ge=0.0, le=1.0)
    confidence: Literal["low", "medium", "high"]
    symptom: str | None = Field(None, description="the symptom this cause explains")
    ranks: list[int] = Field(default_factory=list, description="culprit ranks, not victims")
    nodes: list[str] = Field(default_factory=list, description="culprit nodes or links")
    summary: str
    evidence: list[EvidenceRef] = Field(default_factory=list)
    fix: str
    rules: list[str] = Field(default_factory=list)
    path: list[str] = Field(default_factory=list, description="evidence -> rule -> cause steps")
    experimental: bool = False


class RankSummary(BaseModel):
    """Which ranks the evidence covers."""

    world_size: int | None = None
    seen: list[int] = Field(default_factory=list)
    missing: list[int] = Field(default_factory=list)


class Skipped(BaseModel):
    """An input that could not be read, and why (failure to collect is a result)."""

    model_config = ConfigDict(frozen=True)

    source: str
    reason: str


class RankState(BaseModel):
    """One cell of the rank picture: what a rank was doing or how it ended."""

    rank: int
    state: str = Field(description="e.g. 'all_reduce #41', 'exited -9 (SIGKILL)', 'missing'")
    first_failure: bool = False
    culprit: bool = False


class StackRef(BaseModel):
    """A culprit rank's main-thread stack, innermost frame first ('func (file:line)', as py-spy prints)."""

    rank: int
    pid: int | str | None = Field(None, description="process id (a placeholder under --redact)")
    thread: str | None = None
    frames: list[str] = Field(default_factory=list)


class Report(BaseModel):
    """The whole diagnosis."""

    schema_: str = Field(SCHEMA_ID, alias="schema", description="schema id, versioned")
    model_config = ConfigDict(populate_by_name=True)

    command: str | None = Field(None, description="which command produced it")
    symptom: str | None = None
    causes: list[Cause] = Field(default_factory=list)
    ranks: RankSummary = Field(default_factory=RankSummary)
    skipped: list[Skipped] = Field(default_factory=list)
    next: list[str] = Field(default_factory=list, description="what to collect next time")
    notes: list[str] = Field(default_factory=list)
    rank_states: list[RankState] = Field(default_factory=list)
    timeline: list[EvidenceRef] = Field(default_factory=list, description="first failures, in time order")
    stacks: list[StackRef] = Field(default_factory=list, description="culprit ranks' stacks (live probes)")
    checkpoint: dict[str, Any] | None = None
    scaling: dict[str, Any] | None = None
    rank: int | None = Field(None, description="per-rank reports of the library hook")
    attempt: int | None = None
    evidence: list[dict[str, Any]] | None = Field(None, description="raw evidence (hook reports)")

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON object of the contract (aliases applied, nothing dropped that the contract names)."""
        data = self.model_dump(mode="json", by_alias=True)
        for cause in data.get("causes") or []:  # 'rank(s) none' where no culprit is known, as the text report says
            if isinstance(cause.get("summary"), str):
                cause["summary"] = tidy(cause["summary"])
        for key in ("checkpoint", "scaling", "rank", "attempt", "evidence", "command", "stacks"):
            if data.get(key) in (None, []) and not (key == "evidence" and data.get(key) == []):
                data.pop(key, None)
        return data


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CheckpointSection(_Strict):
    """The `checkpoint` object of `diagnose checkpoint` (schema only; the report carries it as a mapping)."""

    format: str | None = Field(description="torch.save|dcp|hf-trainer|lightning|deepspeed|safetensors|...")
    present: list[str]
    missing: list[str]
    world_size: int | None = None
    path: str | None = None
    keys: dict[str, list[str]] | list[str] | None = Field(None, description="top-level entries and their keys")
    suspicious_globals: list[str] = Field(default_factory=list)
    dangerous_globals: list[str] = Field(default_factory=list)
    sharded: bool | None = None
    issues: list[str] = Field(default_factory=list)
    problems: list[Any] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    error: str | None = None
    tensors: int | None = None
    other: CheckpointSection | None = Field(None, description="the second checkpoint of a comparison")
    mismatches: dict[str, Any] | None = Field(None, description="how the two state dicts differ")


class ScalingRun(_Strict):
    run: str | None = None
    world_size: int | None = None
    distributed: bool | None = None
    b_eff: int | float | None = None
    steps_per_epoch: int | float | None = None
    step_time: float | None = None
    epoch_time: float | None = None
    terms: dict[str, float] = Field(default_factory=dict, description="seconds per step: input, comm, compute, sync")
    shares: dict[str, float] = Field(default_factory=dict)
    limit: str | None = None
    ranks: list[int] = Field(default_factory=list)
    stragglers: list[Any] = Field(default_factory=list)
    local_batch: int | float | None = None
    accumulation: int | float | None = None
    throughput: float | None = None
    data_wait_share: float | None = None


class ScalingEfficiency(_Strict):
    run: str | None = None
    baseline: str | None = None
    world_size: int | None = None
    speedup: float | None = None
    eta: float | None = Field(None, description="T1 / (N * TN)")
    eta_per_sample: float | None = Field(None, description="efficiency per sample when B_eff changed")
    eta_effective: float | None = None
    t1: float | None = Field(None, description="baseline step time (s)")
    tn: float | None = Field(None, description="step time at world size N (s)")
    basis: str | None = None
    changed: list[str] | dict[str, Any] | None = None
    b_eff_ratio: float | None = None
    lr_ratio: float | None = None
    steps_per_epoch_ratio: float | None = None


class ScalingSection(_Strict):
    """The `scaling` object: per-run step-time terms, efficiency, the limit and the move it suggests."""

    runs: list[ScalingRun] = Field(default_factory=list)
    efficiency: list[ScalingEfficiency] = Field(default_factory=list)
    data_wait_share: float | None = None
    limit: str | None = None
    move: dict[str, str] | None = None
    flags: list[str] = Field(default_factory=list)
    records: list[dict[str, Any]] = Field(default_factory=list, description="run records as read")


def _close(node: Any) -> None:
    """additionalProperties: false on every object schema that lists its properties."""
    if isinstance(node, dict):
        if node.get("type") == "object" and "properties" in node:
            node.setdefault("additionalProperties", False)
        for value in node.values():
            _close(value)
    elif isinstance(node, list):
        for value in node:
            _close(value)


def report_schema() -> dict[str, Any]:
    """The published JSON schema of the report (JSON Schema 2020-12, closed objects, typed sections)."""
    schema = Report.model_json_schema(by_alias=True, ref_template="#/$defs/{model}")
    defs = schema.setdefault("$defs", {})
    for model in (CheckpointSection, ScalingSection):
        sub = model.model_json_schema(ref_template="#/$defs/{model}")
        defs.update(sub.pop("$defs", {}))
        if "$ref" not in sub:  # a recursive model comes back as a reference into its own $defs
            defs[model.__name__] = sub
    ev = TypeAdapter(Evidence).json_schema(ref_template="#/$defs/{model}")
    defs.update(ev.pop("$defs", {}))
    defs["Evidence"] = ev
    props = schema["properties"]
    props["checkpoint"] = {"anyOf": [{"$ref": "#/$defs/CheckpointSection"}, {"type": "null"}]}
    props["scaling"] = {"anyOf": [{"$ref": "#/$defs/ScalingSection"}, {"type": "null"}]}
    props["evidence"] = {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Evidence"}}, {"type": "null"}],
                         "description": "evidence records (hook reports, preflight checks)"}
    _close(schema)
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID, **schema}
