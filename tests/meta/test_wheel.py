"""The wheel a user installs (not an editable install) carries the rules and signatures."""

import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_wheel_installs_and_checks_its_rules_outside_the_checkout(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
                   check=True, timeout=600)
    (wheel,) = dist.glob("torchdist_diagnose-*.whl")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=900)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    proc = subprocess.run([str(env_dir / "bin" / "diagnose"), "rules", "check"], cwd=outside,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "fixture cases: OK" in proc.stdout
    where = subprocess.run([str(py), "-c", "import diagnose.rules, diagnose.probes; print(diagnose.rules.__file__)"],
                           cwd=outside, capture_output=True, text=True, check=True).stdout
    assert str(env_dir) in where
