"""`diagnose checkpoint CKPT --model MODULE:FACTORY`: a real model file against real checkpoints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from diagnose.commands.checkpoint import run_checkpoint
from diagnose.errors import ConfigError

MODEL = '''
import torch

BUILT_ON = []


class Net(torch.nn.Module):
    def __init__(self, hidden: int = {hidden}) -> None:
        super().__init__()
        self.fc1 = torch.nn.Linear(8, hidden)
        self.norm = torch.nn.BatchNorm1d(hidden)
        self.{head} = torch.nn.Linear(hidden, 4)

    def forward(self, x):
        return self.{head}(self.norm(self.fc1(x)).relu())


def build() -> torch.nn.Module:
    model = Net()
    BUILT_ON.append(str(next(model.parameters()).device))
    return model
'''


def _write_model(folder: Path, name: str = "model", *, hidden: int = 16, head: str = "out") -> Path:
    path = folder / f"{name}.py"
    path.write_text(MODEL.format(hidden=hidden, head=head))
    return path


def _load(path: Path, factory: str = "build") -> torch.nn.Module:
    from diagnose.probes.checkpoint.model import resolve

    return resolve(f"{path}:{factory}")()


@pytest.fixture()
def model_file(tmp_path: Path) -> Path:
    return _write_model(tmp_path)


def _cause(report, cause_id: str = "state_dict_mismatch"):  # noqa: ANN001, ANN202
    return next(c for c in report.causes if c.id == cause_id)


def test_model_only_and_full_checkpoint_match(model_file: Path, tmp_path: Path) -> None:
    model = _load(model_file)
    optim = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.save(model.state_dict(), tmp_path / "weights.pt")
    torch.save({"model": model.state_dict(), "optimizer": optim.state_dict(), "step": 3}, tmp_path / "full.pt")
    for name in ("weights.pt", "full.pt"):
        report = run_checkpoint([tmp_path / name], model=f"{model_file}:build")
        mm = json.loads(json.dumps(report.checkpoint["mismatches"]))
        assert mm["match"] and mm["raw_keys_match"] and mm["model_device"] == "meta"
        assert mm["keys_first"] == mm["keys_second"] == 9  # 2 linears (4) + batchnorm (5, with buffers)
        assert "state_dict_mismatch" not in [c.id for c in report.causes]
    weights = run_checkpoint([tmp_path / "weights.pt"], model=f"{model_file}:build")
    assert _cause(weights, "checkpoint_missing_state")  # model-only still lacks the training state


def test_built_on_meta_device(model_file: Path, tmp_path: Path) -> None:
    import sys

    torch.save(_load(model_file).state_dict(), tmp_path / "w.pt")
    run_checkpoint([tmp_path / "w.pt"], model=f"{model_file}:build")
    built = [m for name, m in sys.modules.items() if name.startswith("_diagnose_model_")
             and getattr(m, "__file__", None) == str(model_file)]
    assert built and built[-1].BUILT_ON == ["meta"]


def test_renamed_layer_names_each_key(model_file: Path, tmp_path: Path) -> None:
    variant = _load(_write_model(tmp_path, "renamed", head="head"))
    torch.save(variant.state_dict(), tmp_path / "renamed.pt")
    report = run_checkpoint([tmp_path / "renamed.pt"], model=f"{model_file}:build")
    mm = report.checkpoint["mismatches"]
    assert mm["unexpected_keys"] == ["head.bias", "head.weight"]
    assert mm["missing_keys"] == ["out.bias", "out.weight"]
    cause = _cause(report)
    assert cause.confidence == "high"
    assert "2 key(s) only in the checkpoint (head.bias, head.weight)" in cause.summary
    assert "2 only in the model (out.bias, out.weight)" in cause.summary


def test_resized_layer_names_each_shape(model_file: Path, tmp_path: Path) -> None:
    variant = _load(_write_model(tmp_path, "wide", hidden=32))
    torch.save({"model": variant.state_dict(), "step": 1}, tmp_path / "wide.pt")
    report = run_checkpoint([tmp_path / "wide.pt"], model=f"{model_file}:build")
    mm = report.checkpoint["mismatches"]
    keys = [s["key"] for s in mm["shape"]]
    assert keys == ["fc1.bias", "fc1.weight", "norm.bias", "norm.running_mean", "norm.running_var",
                    "norm.weight", "out.weight"]
    assert mm["shape"][1] == {"key": "fc1.weight", "first": [32, 8], "second": [16, 8]}
    assert mm["shape_count"] == 7 and not mm["only_in_first"] and not mm["only_in_second"]
    cause = _cause(report)
    assert cause.confidence == "high" and "fc1.weight [32, 8] vs [16, 8]" in cause.summary


def test_ddp_prefix_is_explained(model_file: Path, tmp_path: Path) -> None:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'pg'}", rank=0, world_size=1)
    try:
        torch.save(DistributedDataParallel(_load(model_file)).state_dict(), tmp_path / "ddp.pt")
    finally:
        dist.destroy_process_group()
    report = run_checkpoint([tmp_path / "ddp.pt"], model=f"{model_file}:build")
    mm = report.checkpoint["mismatches"]
    assert mm["match"] and not mm["raw_keys_match"]
    assert mm["explanation"] == ["the checkpoint has DDP/DataParallel wrapper (`module.`)"]
    cause = _cause(report)
    assert cause.confidence == "medium" and "module." in cause.summary


def test_dtype_mismatch(model_file: Path, tmp_path: Path) -> None:
    torch.save(_load(model_file).to(torch.bfloat16).state_dict(), tmp_path / "bf16.pt")
    report = run_checkpoint([tmp_path / "bf16.pt"], model=f"{model_file}:build")
    mm = report.checkpoint["mismatches"]
    assert mm["dtype_count"] == 8  # num_batches_tracked stays int64
    assert mm["dtype"][0] == {"key": "fc1.bias", "first": "bfloat16", "second": "float32"}
    assert "state_dict_mismatch" not in [c.id for c in report.causes]  # load_state_dict casts dtypes
    assert any("8 tensor(s) differ in dtype" in n and "casts" in n for n in report.notes)


def test_dcp_folder_against_model(dcp_root: Path, tmp_path: Path) -> None:
    seq = tmp_path / "seq.py"
    seq.write_text("import torch\n\ndef build():\n    return torch.nn.Sequential(torch.nn.Linear(8, 16), "
                   "torch.nn.ReLU(), torch.nn.Linear(16, 4))\n")
    report = run_checkpoint([dcp_root / "step_1"], model=f"{seq}:build")
    assert report.checkpoint["mismatches"]["match"]


def test_dotted_module_and_fallback_off_meta(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pkg = tmp_path / "mypkg_ckmodel"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "models.py").write_text(
        "import torch\n\nclass Factory:\n    @staticmethod\n    def build():\n"
        "        torch.zeros(1).item()  # impossible on the meta device\n"
        "        return torch.nn.Linear(2, 3)\n")
    torch.save(torch.nn.Linear(2, 3).state_dict(), tmp_path / "lin.pt")
    monkeypatch.chdir(tmp_path)
    report = run_checkpoint([tmp_path / "lin.pt"], model="mypkg_ckmodel.models:Factory.build")
    assert report.checkpoint["mismatches"]["match"]
    assert report.checkpoint["mismatches"]["model_device"] == "default"
    assert any("could not be built on the meta device" in n for n in report.notes)


@pytest.mark.parametrize(("spec", "message"), [
    ("no_colon_here", "MODULE:FACTORY"),
    ("{model}:missing", "no attribute"),
    ("{model}:torch", "neither callable"),
    ("{tmp}/absent.py:build", "no such file"),
    ("{bad}:build", "importing"),
])
def test_bad_model_specs(model_file: Path, tmp_path: Path, spec: str, message: str) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('boom')\n")
    torch.save({"x": torch.zeros(1)}, tmp_path / "x.pt")
    with pytest.raises(ConfigError, match=message):
        run_checkpoint([tmp_path / "x.pt"], model=spec.format(model=model_file, tmp=tmp_path, bad=bad))


def test_model_with_two_checkpoints_is_refused(model_file: Path, tmp_path: Path) -> None:
    torch.save({"x": torch.zeros(1)}, tmp_path / "x.pt")
    with pytest.raises(ConfigError, match="single checkpoint"):
        run_checkpoint([tmp_path / "x.pt", tmp_path / "x.pt"], model=f"{model_file}:build")
