"""A training script's share of the launch contract (issue 11, item 1): probe fields and end-to-end causes.

Fixtures under fixtures/code/ (sources in SOURCES.md); every near miss (a comment, a docstring, rank=rank,
world_size=world_size, rank % GPUs, LOCAL_RANK) must stay quiet."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from artifact_helpers import FIXTURES

from diagnose.commands.logs import run_logs
from diagnose.probes.artifacts import parse


def _code(text: str) -> list:
    return [e for e in parse("train.py", text)[0] if e.kind == "launch_spec" and e.launcher == "code"]


@pytest.mark.parametrize(
    ("case", "cause", "symptom"),
    [
        ("rank_literal", "rank_env_mismatch", "hang_at_startup"),
        ("device_global_rank", "rank_env_mismatch", "crash"),
        ("ddp_no_sampler", "sampler_misconfig", "slow_scaling"),
        ("dataparallel_torchrun", "launcher_misconfig", "slow_scaling"),
        ("world_size_literal", "launcher_misconfig", "hang_at_startup"),
        ("onmt_gpu_ranks", "launcher_misconfig", "crash"),
        ("lightning_slurm", "launcher_misconfig", "hang_at_startup"),
    ],
)
def test_contradiction_is_the_top_cause(case: str, cause: str, symptom: str) -> None:
    report = run_logs([FIXTURES / "code" / case])
    assert report.causes and report.causes[0].id == cause, [c.id for c in report.causes]
    assert report.symptom == symptom
    assert all(e.line for e in report.causes[0].evidence)  # file:line provenance


@pytest.mark.parametrize("case", ["device_local_rank", "ddp_with_sampler", "near_misses"])
def test_near_miss_names_no_code_cause(case: str) -> None:
    report = run_logs([FIXTURES / "code" / case])
    fired = {r for c in report.causes for r in (c.rules or ())} if report.causes else set()
    assert not any(str(r).startswith("code-") for r in fired), fired
    specs = [
        e
        for e in parse(case, "\n".join(p.read_text() for p in sorted((FIXTURES / "code" / case).iterdir())))[
            0
        ]
        if e.kind == "launch_spec" and e.launcher == "code"
    ]
    assert not any(s.code_rank and s.code_rank.isdigit() for s in specs)
    assert not any(
        s.device_scope == "global" or s.wrapper == "DataParallel" or s.loader_sampler for s in specs
    )


def test_fields_and_lines() -> None:
    (init,) = [s for s in _code((FIXTURES / "code/rank_literal/train.py").read_text()) if s.code_rank]
    assert (init.code_rank, init.world_size, init.provenance.line) == ("0", 2, 7)
    (dev,) = _code((FIXTURES / "code/device_global_rank/finetune.py").read_text())
    assert (dev.device_index, dev.device_scope, dev.provenance.line) == ("rank", "global", 11)


@pytest.mark.parametrize(
    "text",
    [
        "# dist.init_process_group('nccl', world_size=2, rank=0)\n",
        '"""\ndist.init_process_group("nccl", world_size=2, rank=0)\n"""\n',
        "x = 'dist.init_process_group(world_size=2, rank=0)'\nprint('rank=0')\n",
        "dist.init_process_group('nccl', rank=rank, world_size=world_size)\n",
        "torch.cuda.set_device(rank % torch.cuda.device_count())\n",
        "torch.cuda.set_device(int(os.environ['LOCAL_RANK']))\n",
        "device = torch.device(f'cuda:{args.gpu}')\n",
        "# model = nn.DataParallel(model)\n",
    ],
)
def test_near_miss_lines(text: str) -> None:
    specs = _code(text)
    assert not any((s.code_rank or "").isdigit() or s.device_scope == "global" or s.wrapper for s in specs), (
        specs
    )


def test_one_node_rank_device_is_quiet(tmp_path: Path) -> None:
    (tmp_path / "run.sh").write_text("torchrun --nproc_per_node 4 train.py\n")
    (tmp_path / "train.py").write_text("torch.cuda.set_device(rank)\n")
    report = run_logs([tmp_path])
    assert not report.causes or report.causes[0].id != "rank_env_mismatch"


def test_hostile_text_is_linear() -> None:
    lines = [
        "init_process_group(" + "rank=" * 2000,
        "set_device(" + "(" * 5000,
        "DataLoader(" + "x=1, " * 3000,
        "cuda:{" * 4000,
        '"""' * 3001,
    ]
    started = time.perf_counter()
    for line in lines:
        _code("\n".join([line] * 50))
    # a guard against catastrophic backtracking (which takes minutes to hours on these lines), not a benchmark: the
    # bound is loose so that a loaded 2-core machine (about 5 s here) does not fail it
    assert time.perf_counter() - started < 30.0


@pytest.mark.parametrize(
    ("command", "world", "procs"),
    [
        ("onmt_train -config c.yaml -world_size 1 -gpu_ranks 0 1 2 3", 1, 4),
        (
            "onmt_train -world_size 4 -gpu_ranks 0 1 -save_model m",
            4,
            2,
        ),  # one node of two: not a contradiction
    ],
)
def test_onmt_gpu_ranks_are_counted(command: str, world: int, procs: int) -> None:
    (spec,) = [e for e in parse("train.sh", command)[0] if e.kind == "launch_spec"]
    assert (spec.launcher, spec.world_size, spec.procs_per_node) == ("onmt_train", world, procs)


_LIGHTNING = """import lightning as L
class DM(L.LightningDataModule):
    def train_dataloader(self):
        sampler = {sampler}(self.train_set.labels)
        return DataLoader(self.train_set, batch_size=64, sampler=sampler)

trainer = L.Trainer(
    accelerator="gpu",
    devices={devices},
    {flag}=False,
)
"""


@pytest.mark.parametrize("flag", ["use_distributed_sampler", "replace_sampler_ddp"])
def test_lightning_sampler_flag_is_read(flag: str) -> None:
    (spec,) = _code(_LIGHTNING.format(sampler="BalancedClassSampler", devices=4, flag=flag))
    assert (spec.wrapper, spec.procs_per_node, spec.loader_sampler) == ("lightning", 4, f"{flag}=False")
    (own,) = _code(_LIGHTNING.format(sampler="DistributedSampler", devices=4, flag=flag))
    assert own.loader_sampler == f"{flag}=False, own"


@pytest.mark.parametrize(
    ("sampler", "devices", "fires"),
    [("BalancedClassSampler", 4, True), ("BalancedClassSampler", 1, False), ("DistributedWeightedSampler", 4, False)],
)
def test_lightning_sampler_disabled_end_to_end(tmp_path: Path, sampler: str, devices: int, fires: bool) -> None:
    (tmp_path / "train.py").write_text(
        _LIGHTNING.format(sampler=sampler, devices=devices, flag="use_distributed_sampler"))
    report = run_logs([tmp_path], symptom="slow_scaling")
    top = report.causes[0] if report.causes else None
    hit = top is not None and top.id == "sampler_misconfig" and top.confidence == "medium"
    assert hit is fires, [(c.id, c.confidence) for c in report.causes]
