"""Run the CLI in a child process under an address-space limit, and read its peak memory."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

AS_LIMIT = 3 << 30  # a regression fails the test instead of taking the machine down
_RUNNER = """
import resource, sys
from diagnose.cli import main
try:
    rc = main(sys.argv[1:])
except SystemExit as exc:
    rc = exc.code
sys.stdout.flush()
sys.stderr.write("\\nPEAK_RSS_KB=%d\\n" % resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(rc or 0)
"""


@dataclass
class Run:
    rc: int
    stdout: str
    stderr: str
    peak_rss: int  # bytes

    def json(self) -> dict:
        return json.loads(self.stdout)


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def run_cli(*args: str | Path, timeout: float = 300, cwd: Path | None = None) -> Run:
    """``diagnose ARGS`` in a child limited to AS_LIMIT bytes of address space."""
    proc = subprocess.run([sys.executable, "-c", _RUNNER, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=_limit, cwd=cwd)
    peak = 0
    for line in proc.stderr.splitlines():
        if line.startswith("PEAK_RSS_KB="):
            peak = int(line.split("=", 1)[1]) * 1024
    return Run(proc.returncode, proc.stdout, proc.stderr, peak)
