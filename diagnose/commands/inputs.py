"""What a command reads besides its flags: standard input (``-``), a Slurm job's files, and
the identifiers every input names (paths, the command line, the environment) for ``--redact``.
"""

from __future__ import annotations

import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path
from types import TracebackType
from typing import Any

from diagnose.probes.files import walk

STDIN_NAME = "<stdin>"
STDIN_MAX = 2 << 30  # what `-` keeps of standard input
LEARN_MAX_BYTES = 8 << 20  # per input file, read to learn identifiers named only there
LEARN_MAX_FILES = 2000
_ENV = ("USER", "LOGNAME", "HOME", "HOSTNAME", "PWD", "SLURM_JOB_ID", "SLURM_JOB_PARTITION", "SLURM_JOB_ACCOUNT",
        "SLURM_JOB_USER", "SLURM_JOB_NODELIST", "SLURM_SUBMIT_HOST", "SLURMD_NODENAME", "MASTER_ADDR",
        "MASTER_PORT", "TORCHELASTIC_RUN_ID")


class Inputs:
    """The paths a command reads (stdin spooled to a private file) and what they teach the redactor."""

    def __init__(self, args: Any) -> None:
        self.args = args
        self._tmp: str | None = None
        self.stdin_path: Path | None = None
        self.paths: list[Path] = []
        cmd = args.command
        if cmd == "logs":
            if args.slurm:
                # start-up: the Slurm fan-out, only with --slurm
                from diagnose.commands.slurm_files import slurm_output_files

                self.paths = slurm_output_files(args.slurm)
            else:
                self.paths = [self._stdin() if p == Path("-") else p for p in args.paths]
        elif hasattr(args, "paths"):
            self.paths = list(args.paths)
        elif hasattr(args, "directory"):
            self.paths = [args.directory]

    def _stdin(self) -> Path:
        self._tmp = tempfile.mkdtemp(prefix="diagnose-stdin-")
        self.stdin_path = Path(self._tmp) / "stdin"
        with open(self.stdin_path, "wb") as out:
            left = STDIN_MAX
            while left > 0:
                chunk = sys.stdin.buffer.read(min(1 << 20, left))
                if not chunk:
                    break
                out.write(chunk)
                left -= len(chunk)
        return self.stdin_path

    @property
    def names(self) -> list[str]:
        """The inputs as the user named them."""
        if self.args.command == "hang":
            return [f"job {self.args.job}"]
        if self.args.command == "preflight":
            return [socket.gethostname()]
        return [STDIN_NAME if p == self.stdin_path else str(p) for p in self.paths]

    def tidy(self, report: Any) -> None:
        """Name standard input `<stdin>` in the report, not the spool file."""
        if self.stdin_path is None:
            return
        spool = str(self.stdin_path)
        for cause in report.causes:
            cause.evidence = [e.model_copy(update={"source": STDIN_NAME}) if e.source == spool else e
                              for e in cause.evidence]
        report.timeline = [e.model_copy(update={"source": STDIN_NAME}) if e.source == spool else e
                           for e in report.timeline]
        report.notes = [n.replace(spool, STDIN_NAME) for n in report.notes]

    def teach(self, redactor: Any) -> None:
        """Learn identifiers from the command line, the environment, the paths and the inputs' text."""
        redactor.learn_text(" ".join(getattr(self.args, "argv", None) or sys.argv[1:]))
        env = {k: os.environ[k] for k in _ENV if os.environ.get(k)}
        redactor.learn_text("\n".join(f"{k}={v}" for k, v in env.items()))
        for key in ("USER", "LOGNAME", "SLURM_JOB_USER"):
            if env.get(key):
                redactor.learn("user", env[key])
        job = getattr(self.args, "job", None)
        if isinstance(job, str) and job:  # hang --job: a Slurm job id, torchrun run id or pid, kind: prefix optional
            kind, _, value = job.rpartition(":")
            redactor.learn("pid" if kind == "pid" else "job", value or job)
        host = socket.gethostname()
        if host:
            redactor.learn("host", host)
        for path in self.paths:
            if path != self.stdin_path:
                redactor.learn_path(str(path.resolve()) if path.exists() else str(path))
        for path in self._files():
            try:
                with open(path, "rb") as fh:
                    redactor.learn_text(fh.read(LEARN_MAX_BYTES).decode("utf-8", "replace"))
            except OSError:
                continue

    def _files(self) -> list[Path]:
        files, _ = walk([p for p in self.paths if p.exists()])
        return [f for f in files if f.suffix not in (".pt", ".pth", ".bin", ".safetensors", ".ckpt")][:LEARN_MAX_FILES]

    def __enter__(self) -> Inputs:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._tmp:
            shutil.rmtree(self._tmp, ignore_errors=True)
