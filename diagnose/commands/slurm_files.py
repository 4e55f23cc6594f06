"""`diagnose logs --slurm JOBID`: the output and error files of a finished Slurm job.

``scontrol show job`` knows a job for a while after it ends (MinJobAge) and prints its
StdOut/StdErr already expanded; later only accounting (``sacct``, Slurm 23.02+) knows them,
with the ``%j``-style patterns still in. Nothing here talks to anything but the local Slurm clients.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from diagnose.errors import ConfigError
from diagnose.probes.live.fanout import slurm_job

_SACCT_FIELDS = "JobID,JobName,User,WorkDir,StdOut,StdErr"


def _expand(pattern: str, job: str, name: str, user: str, workdir: str) -> str:
    """Slurm's filename patterns (%j %J %A %a %x %u %N %%) for a whole-job view."""
    out, i = [], 0
    table = {"j": job, "J": job, "A": job, "a": "0", "x": name, "u": user, "N": "*", "n": "0", "t": "0", "s": "*"}
    while i < len(pattern):
        ch = pattern[i]
        if ch == "%" and i + 1 < len(pattern):
            j = i + 1
            while j < len(pattern) and pattern[j].isdigit():  # %5j: zero-padded
                j += 1
            key = pattern[j] if j < len(pattern) else ""
            width = int(pattern[i + 1:j] or 0)
            if key == "%":
                out.append("%")
            elif key in table:
                out.append(table[key].zfill(width) if table[key].isdigit() else table[key])
            else:
                out.append(pattern[i:j + 1])
            i = j + 1
            continue
        out.append(ch)
        i += 1
    path = "".join(out)
    return path if path.startswith("/") or not workdir else str(Path(workdir) / path)


def _sacct(job: str) -> list[str]:
    exe = shutil.which("sacct")
    if exe is None:
        return []
    try:
        proc = subprocess.run([exe, "-j", job, "-X", "-n", "-P", "-o", _SACCT_FIELDS], capture_output=True,
                              text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    for line in proc.stdout.splitlines():
        cells = line.split("|")
        if len(cells) == 6 and cells[0].split(".")[0] == job:
            _, name, user, workdir, out, err = cells
            paths = [_expand(p, job, name, user, workdir) for p in (out, err) if p]
            if not paths and workdir:
                paths = [str(Path(workdir) / f"slurm-{job}.out")]
            return paths
    return []


def slurm_output_files(job: str) -> list[Path]:
    """The job's StdOut/StdErr files that exist (raises ConfigError when Slurm knows none)."""
    ident = job.removeprefix("slurm:").strip()
    if not ident.split("_")[0].isdigit():
        raise ConfigError(f"--slurm takes a Slurm job id (a number), not {job!r}")
    found = slurm_job(ident)
    candidates = [p for p in ((found.stdout, found.stderr) if found else ()) if p]
    if not candidates:
        candidates = _sacct(ident)
    if not candidates:
        raise ConfigError(f"Slurm knows no job {ident} here (neither scontrol nor sacct name its output files)")
    paths = []
    for name in dict.fromkeys(candidates):
        path = Path(name)
        if path.is_file():
            paths.append(path)
    if not paths:
        raise ConfigError(f"Slurm job {ident}: its output files are gone or not readable here: "
                          + ", ".join(dict.fromkeys(candidates)))
    return paths
