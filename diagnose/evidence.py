"""Typed, immutable evidence records: the only thing probes produce and rules consume.

Every record carries its provenance (which probe, which file and line, which rank,
host and pid), so a conclusion can always cite the lines that led to it.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

Scalar = str | int | float | bool


class Provenance(BaseModel):
    """Where a piece of evidence came from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    probe: str = Field("fixture", description="name of the probe that collected it")
    source: str | None = Field(None, description="file (or live source) it was read from")
    line: int | None = Field(None, description="1-based line number in the source")
    host: str | None = Field(None, description="host the evidence belongs to")
    pid: int | None = Field(None, description="process id it belongs to")


class _Evidence(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    rank: int | None = Field(None, description="global rank, when known")
    provenance: Provenance = Field(default_factory=Provenance)
    text: str | None = Field(None, description="the raw line or summary that shows it")
    time: float | None = Field(None, description="seconds since the epoch, when the source says")


class LogLine(_Evidence):
    """A line that matched a named signature of `rules/signatures/`."""

    kind: Literal["log_line"] = "log_line"
    signature: str = Field(description="name of the signature that matched")
    fields: dict[str, Scalar] = Field(default_factory=dict, description="fields the signature extracted")


class RankExit(_Evidence):
    """How a rank process ended, as the launcher or scheduler reported it."""

    kind: Literal["rank_exit"] = "rank_exit"
    exitcode: int | None = Field(None, description="exit code; negative for a signal")
    signal: str | None = Field(None, description="signal name, e.g. SIGKILL")
    error_file: bool | None = Field(None, description="whether the rank left an error file (@record)")
    root_cause: bool = Field(False, description="the launcher named this rank the first failure")
    message: str | None = Field(None, description="error message the launcher recorded")


class CollectiveState(_Evidence):
    """A rank's position in a collective: from watchdog lines, flight recorder, or stacks."""

    kind: Literal["collective_state"] = "collective_state"
    process_group: str = Field("0", description="process group name or id")
    op: str | None = Field(None, description="collective type, lower case (all_reduce, broadcast, barrier)")
    seq: int | None = Field(None, description="collective sequence number")
    state: Literal["scheduled", "started", "completed", "timed_out"] = "started"
    last_enqueued: int | None = Field(None, description="last collective the rank enqueued")
    last_completed: int | None = Field(None, description="last collective the rank completed")
    shape: str | None = Field(None, description="tensor shape, when known")
    dtype: str | None = Field(None, description="tensor dtype, when known")


class ProcessGroup(_Evidence):
    """Membership of a process group."""

    kind: Literal["process_group"] = "process_group"
    id: str = Field("0", description="process group name or id")
    members: tuple[int, ...] = Field(description="global ranks in the group")


class RankStatus(_Evidence):
    """Whether a rank was seen, and in what state."""

    kind: Literal["rank_status"] = "rank_status"
    status: Literal["alive", "exited", "missing", "no_evidence", "stopped", "zombie"]
    detail: str | None = None


class StackSample(_Evidence):
    """What a rank's main thread was doing when sampled (live probe or in-process dump)."""

    kind: Literal["stack_sample"] = "stack_sample"
    activity: Literal[
        "collective", "barrier", "rendezvous", "data_loading", "checkpoint_io", "backward",
        "evaluation", "user_code", "sleeping", "idle", "unknown",
    ] = Field(description="class of the innermost recognised frame")
    op: str | None = Field(None, description="collective name when activity is collective")
    call_site: str | None = Field(None, description="user frame that led there, file:line")
    frames: tuple[str, ...] = Field((), description="innermost first, 'func (file:line)'")
    thread: str | None = None
    sample: int = Field(0, description="sample index: a second sample tells stuck from slow")
    epoch: int | None = None
    batch: int | None = None
    counters: dict[str, int] = Field(default_factory=dict, description=(
        "integer locals of user frames ('function.name'): a change between samples is progress"))
    exits: dict[str, int] = Field(default_factory=dict, description=(
        "user frames 'file:line' whose block goes on to a continue/break/return/raise: its line"))


class RankEnv(_Evidence):
    """Launch environment of a rank (RANK, WORLD_SIZE, MASTER_ADDR, NCCL_*, versions)."""

    kind: Literal["rank_env"] = "rank_env"
    variables: dict[str, str] = Field(default_factory=dict)


class StepMetric(_Evidence):
    """One step-time, throughput or loss observation."""

    kind: Literal["step_metric"] = "step_metric"
    run: str | None = Field(None, description="run label (file or world size) it belongs to")
    step: int | None = None
    epoch: int | None = None
    epoch_progress: float | None = Field(None, description="the epoch with its fraction, as a trainer logs it "
                                                           "('epoch': 0.96)")
    step_time: float | None = Field(None, description="seconds per step")
    data_time: float | None = Field(None, description="seconds per step waiting for data")
    comm_time: float | None = None
    compute_time: float | None = None
    throughput: float | None = Field(None, description="samples or iterations per second")
    loss: float | None = None
    lr: float | None = None
    world_size: int | None = None
    local_batch: int | None = None
    accumulation: int | None = None
    steps_per_epoch: int | None = None
    epoch_time: float | None = Field(None, description="wall seconds of one epoch")
    sync_time: float | None = Field(None, description="seconds per step in host-device syncs")
    distributed: bool | None = Field(None, description="the source says several ranks, without a count")
    batch: str | None = Field(None, description="sample ids the rank printed for this batch")


class ScalingFact(_Evidence):
    """A fact derived from step metrics by the scaling analyzer (shares, ratios, efficiencies)."""

    kind: Literal["scaling_fact"] = "scaling_fact"
    name: str = Field(description="fact name, e.g. data_wait_share, eta, dominant_term")
    value: Scalar = Field(description="the number, flag or label")
    run: str | None = Field(None, description="run label it belongs to")
    world_size: int | None = None


class CheckpointContent(_Evidence):
    """What a checkpoint holds and lacks, read without executing pickled code."""

    kind: Literal["checkpoint_content"] = "checkpoint_content"
    format: str
    present: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    world_size: int | None = None
    suspicious_globals: tuple[str, ...] = ()
    issues: tuple[str, ...] = Field((), description=(
        "problem codes: missing_shard, stray_shard, truncated, torn_step, unreadable, "
        "world_size_mismatch, key_mismatch, shape_mismatch, prefix_mismatch, dtype_mismatch"))


class MemoryState(_Evidence):
    """Memory of a rank or host: bytes used and limits."""

    kind: Literal["memory_state"] = "memory_state"
    device: str = Field("host", description="'host' or a device such as cuda:0")
    used_bytes: int | None = None
    total_bytes: int | None = None
    requested_bytes: int | None = None


class ReportedSymptom(_Evidence):
    """What the user said they saw (`--symptom`): a prior, never proof."""

    kind: Literal["reported_symptom"] = "reported_symptom"
    symptom: str
    inferred: bool = Field(False, description="read from the artifacts or the report's words, not told")


class HostCheck(_Evidence):
    """One pre-launch check of this host or environment (`diagnose preflight`): pass, fail or skip."""

    kind: Literal["host_check"] = "host_check"
    name: str = Field(description="check id, e.g. rdzv_port, dev_shm, cpu_threads (rules/signatures/preflight)")
    status: Literal["pass", "fail", "skip"] = Field(description="outcome; skip when the check cannot run here")
    value: Scalar | None = Field(None, description="what was measured")
    limit: Scalar | None = Field(None, description="the threshold or expected value it was compared with")
    detail: str | None = Field(None, description="one line for people: what was found")
    fix: str | None = Field(None, description="what to do when it fails")


class LaunchSpec(_Evidence):
    """How a job was launched, read from a command line, batch script, manifest or env dump (the launch contract)."""

    kind: Literal["launch_spec"] = "launch_spec"
    launcher: str = Field(description="torchrun, torch.distributed.launch, mp.spawn, srun, sbatch, mpirun, deepspeed, "
                                      "accelerate, lightning, kubernetes, env, code (a training script's calls)")
    nodes: int | None = Field(None, description="nodes asked for (--nnodes, -N, --num_machines)")
    procs_per_node: int | None = Field(None, description="processes per node (--nproc-per-node, --ntasks-per-node)")
    world_size: int | None = Field(None, description="total processes, when stated (-n/--ntasks, -np, WORLD_SIZE)")
    rdzv_backend: str | None = None
    rdzv_endpoint: str | None = None
    rdzv_id: str | None = None
    master_addr: str | None = None
    master_port: int | None = None
    gpus_per_node: int | None = Field(None, description="GPUs asked for per node (--gres=gpu:N, --gpus-per-node)")
    gpus_per_task: int | None = None
    cpus_per_task: int | None = None
    mem: str | None = Field(None, description="memory asked for per node or per GPU (--mem, --mem-per-gpu), as written")
    mem_per_cpu: str | None = Field(None, description="memory asked for per CPU (--mem-per-cpu), as written")
    exclusive: bool | None = None
    cuda_visible_devices: str | None = None
    visible_gpus: int | None = Field(None, description="devices CUDA_VISIBLE_DEVICES leaves visible")
    hosts: str | None = Field(None, description="the hosts or host file an mpirun launch names (-H, --host, --hostfile)")
    node_rank: str | None = Field(None, description="--node-rank as written (a number or a shell variable)")
    launches_tasks: bool | None = Field(None, description="a batch script starts its processes (srun/torchrun/mpirun line)")
    inner_launcher: str | None = Field(None, description="launcher run inside this one (srun ... torchrun)")
    script: str | None = Field(None, description="the training script or module launched")
    loader_workers: int | None = Field(None, description="DataLoader workers per process, from the script's own "
                                                         "arguments (--num_workers, --workers, -j, num_workers=)")
    script_gpus: int | None = Field(None, description="GPUs the script's own arguments name (--gpu 0,1,2,3, --gpus 8)")
    script_local_rank: int | None = Field(None, description="a local rank the command passes to the script by hand "
                                                             "(--local_rank 2): every process it starts gets that one")
    procs_default: int | None = Field(None, description="processes per node the launcher starts when not told "
                                                        "(torchrun and torch.distributed.launch: 1)")
    backend: str | None = Field(None, description="process-group backend named (nccl, gloo)")
    wrapper: str | None = Field(None, description="parallel wrapper named (ddp, fsdp, deepspeed, ...)")
    variables: dict[str, str] = Field(default_factory=dict, description="NCCL_*, TORCH_*, thread and rank variables set")
    code_rank: str | None = Field(None, description="a script's init_process_group(rank=...) as written")
    rank_scope: str | None = Field(None, description="local or global: whether code_rank is a per-node index")
    device_index: str | None = Field(None, description="the expression a script takes its CUDA device index from "
                                                       "(set_device, cuda:{...}, device_ids)")
    device_scope: str | None = Field(None, description="local or global: whether device_index is a per-node index")
    loader_sampler: str | None = Field(None, description="a shuffling training DataLoader's sampler as written; "
                                                         "'none' when it has none and no sharding sampler is named; "
                                                         "for Lightning's Trainer its use_distributed_sampler / "
                                                         "replace_sampler_ddp as written (', own' when the script "
                                                         "builds a sharding sampler itself)")
    local_batch: int | None = Field(None, description="batch per process the command sets (OpenMMLab's --cfg-options "
                                                      "train_dataloader.batch_size=8)")
    design_world: int | None = Field(None, description="GPUs the config was written for, from its name (OpenMMLab's "
                                                       "8xb64: 8 GPUs)")
    design_batch: int | None = Field(None, description="batch per GPU the config was written for (8xb64: 64)")
    auto_scale_lr: bool | None = Field(None, description="the command scales the LR to the batch it runs "
                                                         "(OpenMMLab's --auto-scale-lr)")

    @property
    def processes(self) -> int | None:
        """The world size it states, else nodes x processes per node when it states those, else None."""
        return self.world_size or ((self.nodes or 1) * self.procs_per_node if self.procs_per_node else None)


class ConfigSetting(_Evidence):
    """Training settings read from a config (Accelerate, DeepSpeed, Lightning/Hydra, torchtune, HF TrainingArguments)."""

    kind: Literal["config_setting"] = "config_setting"
    format: str = Field(description="accelerate, deepspeed, lightning, hydra, torchtune, opennmt, opennmt_flags, "
                                    "hf_training_args")
    local_batch: int | None = Field(None, description="batch per device")
    global_batch: int | None = Field(None, description="total batch, when the config states it")
    accumulation: int | None = None
    precision: str | None = None
    zero_stage: int | None = None
    offload_optimizer: str | None = None
    offload_param: str | None = None
    fsdp_wrap: str | None = None
    fsdp_state_dict_type: str | None = None
    num_workers: int | None = None
    lr: float | None = None
    warmup: float | None = Field(None, description="warmup steps (or ratio when below 1)")
    sync_batchnorm: bool | None = None
    log_every: int | None = None
    num_processes: int | None = None
    num_machines: int | None = None
    distributed_type: str | None = None
    world_size: int | None = Field(None, description="the world size the config states (OpenNMT's world_size)")
    node_ranks: tuple[int, ...] = Field((), description="the ranks this node's processes take (OpenNMT's gpu_ranks)")
    master_addr: str | None = Field(None, description="the rendezvous address the config states")
    reduce_bucket_size: float | None = Field(None, description="DeepSpeed ZeRO's reduce bucket, in elements")
    allgather_bucket_size: float | None = Field(None, description="DeepSpeed ZeRO's all-gather bucket, in elements")
    overlap_comm: bool | None = None
    settings: dict[str, Scalar] = Field(default_factory=dict, description="every recognised key, as written")

    @property
    def zero_bucket_gb(self) -> float | None:
        """GB (10^9 bytes) that ZeRO stage 1/2's communication buckets take: (all-gather + reduce bucket) x 2 bytes,
        x 4.5 with overlap_comm (Hugging Face's DeepSpeed guide: 5e8-element buckets with overlap_comm need about
        9 GB; huggingface/transformers:docs/source/en/deepspeed.md). None for other stages or unstated buckets."""
        if self.zero_stage not in (1, 2) or self.reduce_bucket_size is None:
            return None
        elements = self.reduce_bucket_size + (self.allgather_bucket_size or self.reduce_bucket_size)
        return round(elements * 2 * (4.5 if self.overlap_comm else 1.0) / 1e9, 1)


class SystemFact(_Evidence):
    """One fact a system tool printed (nvidia-smi, topo -m, free, ulimit, df, ibstat, pip, collect_env, ...)."""

    kind: Literal["system_fact"] = "system_fact"
    tool: str = Field(description="the tool whose output it is, e.g. nvidia-smi, nvidia-smi-topo, collect_env")
    name: str = Field(description="fact name, e.g. gpu_count, gpu_link, torch_version (rules/artifacts/system.yaml)")
    value: Scalar = Field(description="the number, flag or label")
    detail: str | None = None


class MetricSeries(_Evidence):
    """Results of one run in a table or JSON lines: a metric at a world size or seed."""

    kind: Literal["metric_series"] = "metric_series"
    name: str = Field(description="metric, e.g. throughput, step_time, loss, accuracy")
    run: str | None = None
    world_size: int | None = None
    seed: int | None = None
    values: tuple[float, ...] = ()


class InferredSymptom(_Evidence):
    """The symptom that the kind of artifact suggests when the user names none: a weak prior."""

    kind: Literal["inferred_symptom"] = "inferred_symptom"
    symptom: str
    basis: str = Field(description="what was seen that suggests it")
    missing: tuple[str, ...] = Field((), description="artifacts that would separate the causes of this symptom")
    undecided: tuple[str, ...] = Field((), description="symptoms the basis cannot tell apart (a bare hang word says "
                                                       "nothing of when): the report's wording picks one of them")
    runner_up: str | None = Field(None, description="the next likeliest symptom where the reading was close")
    said: bool = Field(False, description="the report's own words name it (not a guess from the artifacts' kind or "
                                          "the wording table)")


class ReportWords(_Evidence):
    """The words of one file that the wording table knows (``probes/artifacts/wording.py``): what the engine's
    last-resort symptom guess reads when nothing else names a symptom."""

    kind: Literal["report_words"] = "report_words"
    words: tuple[str, ...] = Field(description="known words of the file's head, sorted")
    sentences: int = Field(0, description="lines of the file's head that read as sentences a user wrote")


class Mention(_Evidence):
    """A component a report mentions (BatchNorm, the sampler, Ethernet, Docker, ...): weak evidence that orders
    the causes of a symptom known only from the report (``rules/artifacts/mentions.yaml``)."""

    kind: Literal["mention"] = "mention"
    component: str = Field(description="what is mentioned, e.g. batchnorm, sampler, ethernet (mentions.yaml)")
    words: str = Field(description="the words that mention it, as written")
    where: Literal["prose", "code"] = Field(description="a sentence the user wrote, or a command, code or config line")


class CodeFact(_Evidence):
    """A distributed-training pattern a pasted training script shows (``rules/artifacts/code_facts.yaml``): a
    collective under a one-rank branch, torch.load without map_location, a DistributedSampler never given its
    epoch, ... Code is text, never run."""

    kind: Literal["code_fact"] = "code_fact"
    fact: str = Field(description="what the script shows, e.g. collective_under_rank_guard (code_facts.yaml)")
    call: str = Field(description="the call or construct at the cited line, as written")
    guard: str | None = Field(None, description="the condition of the enclosing one-rank branch, as written")


Evidence = Annotated[
    LogLine | RankExit | CollectiveState | ProcessGroup | RankStatus | StackSample | RankEnv | StepMetric | CheckpointContent | MemoryState | ReportedSymptom | ScalingFact | HostCheck
    | LaunchSpec | ConfigSetting | SystemFact | MetricSeries | InferredSymptom | ReportWords | Mention | CodeFact,
    Field(discriminator="kind"),
]

EVIDENCE_CLASSES: dict[str, type[_Evidence]] = {
    cls.model_fields["kind"].default: cls
    for cls in (LogLine, RankExit, CollectiveState, ProcessGroup, RankStatus, StackSample,
                RankEnv, StepMetric, CheckpointContent, MemoryState, ReportedSymptom, ScalingFact, HostCheck,
                LaunchSpec, ConfigSetting, SystemFact, MetricSeries, InferredSymptom, ReportWords, Mention, CodeFact)
}
EVIDENCE_KINDS: frozenset[str] = frozenset(EVIDENCE_CLASSES)

_LIST_ADAPTER: TypeAdapter[list[Any]] = TypeAdapter(list[Evidence])


def _rank_range(part: str) -> tuple[int, int] | None:
    """``"3"`` or ``"2 - 5"`` as (low, high); None for anything else."""
    lo, sep, hi = part.strip().partition("-")
    lo, hi = lo.strip(), hi.strip()
    if not lo.isdecimal() or (sep and not hi.isdecimal()):
        return None
    return int(lo), int(hi or lo)


def expand_ranks(spec: str | int | list[int]) -> list[int]:
    """Expand a compact rank list such as ``"0-2,4-7"`` into ranks."""
    if isinstance(spec, int):
        return [spec]
    if isinstance(spec, list):
        return [int(r) for r in spec]
    ranks: list[int] = []
    for part in str(spec).split(","):
        bounds = _rank_range(part)
        if bounds is None:
            raise ValueError(f"bad rank range {part!r} in {spec!r}")
        lo, hi = bounds
        if hi < lo:
            raise ValueError(f"rank range {part!r} runs backwards")
        ranks.extend(range(lo, hi + 1))
    return ranks


def parse_evidence(records: list[dict[str, Any]]) -> list[Any]:
    """Validate plain dicts into evidence, expanding ``ranks: "0-3"`` into one record per rank.

    ``members`` of a process group may also be given as a range string.
    """
    expanded: list[dict[str, Any]] = []
    for rec in records:
        rec = dict(rec)
        if rec.get("kind") == "process_group" and isinstance(rec.get("members"), (str, int)):
            rec["members"] = tuple(expand_ranks(rec["members"]))
        if "ranks" in rec:
            spec = rec.pop("ranks")
            for r in expand_ranks(spec):
                expanded.append({**rec, "rank": r})
        else:
            expanded.append(rec)
    return _LIST_ADAPTER.validate_python(expanded)


def dump_evidence(items: list[Any]) -> list[dict[str, Any]]:
    """Plain JSON-able dicts of evidence, the inverse of `parse_evidence`."""
    return _LIST_ADAPTER.dump_python(items, mode="json", exclude_none=True) if items else []
