"""The report model: what every command prints, as text or as versioned JSON."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_ID = "diagnose.report/1"


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
    pid: int | None = None
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
        for key in ("checkpoint", "scaling", "rank", "attempt", "evidence", "command", "stacks"):
            if data.get(key) in (None, []) and not (key == "evidence" and data.get(key) == []):
                data.pop(key, None)
        return data


def report_schema() -> dict[str, Any]:
    """The published JSON schema of the report."""
    schema = Report.model_json_schema(by_alias=True)
    schema["$id"] = SCHEMA_ID
    return schema
