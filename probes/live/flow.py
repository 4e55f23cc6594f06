"""Does a rank that stands at a line leave its block right after it? (standard library only)

A rank that sleeps at line 54 of a loop body whose next statement is ``continue`` will not reach
the collective written at line 56: it skips it, although it stands before it in the file. Read
from the source file's syntax tree (never executed), for the live probe and the in-process hook.
"""

from __future__ import annotations

import ast
import os
from functools import lru_cache

MAX_SOURCE = 4 << 20
_EXITS = (ast.Continue, ast.Break, ast.Return, ast.Raise)


def exit_after(filename: str, line: int) -> int | None:
    """The line of the continue/break/return/raise that follows the statement at `line` in its own block."""
    try:
        stat = os.stat(filename)
    except OSError:
        return None
    if stat.st_size > MAX_SOURCE or not os.path.isfile(filename):
        return None
    return _exit_lines(filename, stat.st_mtime_ns).get(line)


@lru_cache(maxsize=64)
def _exit_lines(filename: str, _mtime: int) -> dict[int, int]:
    """Line -> the exit statement its block goes on to, for every line of such a statement."""
    try:
        with open(filename, "rb") as fh:
            tree = ast.parse(fh.read(MAX_SOURCE + 1))
    except (OSError, SyntaxError, ValueError, RecursionError):
        return {}
    lines: dict[int, int] = {}
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if not isinstance(block, list):
                continue
            exit_line: int | None = None
            for stmt in reversed(block):
                if isinstance(stmt, _EXITS):
                    exit_line = stmt.lineno
                elif isinstance(stmt, ast.stmt) and exit_line is not None:
                    for n in range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1):
                        lines[n] = min(lines.get(n, exit_line), exit_line)
    return lines
