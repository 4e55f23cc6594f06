"""The words every renderer shares: the one-line answer, tidy phrases, cuts at a word.

Text, Markdown and HTML all start from the same answer line, so the terminal, a pasted
issue and the page title say the same thing.
"""

from __future__ import annotations

from typing import Any

from diagnose.output.grid import rank_ranges
from diagnose.output.report import Cause, Report, tidy

_EMPTY_WORDS = ("None", "none", "?", "#?", "null")


def cut(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word boundary to at most ``limit`` characters (with an ellipsis)."""
    flat = text.replace("\r", " ").replace("\n", " ").replace("\t", " ").strip()
    if len(flat) <= limit:
        return flat
    head = flat[: limit - 1]
    space = head.rfind(" ")
    if space > limit // 2:
        head = head[:space]
    return head.rstrip(" ,;:") + "…"


def signal_of(report: Report, cause: Cause) -> str | None:
    """The signal a culprit rank ended with ('SIGKILL'), from the rank picture."""
    culprits = set(cause.ranks)
    for cell in report.rank_states:
        if cell.rank in culprits and "(SIG" in cell.state:
            return cell.state.rsplit("(", 1)[1].rstrip(")")
    return None


def who(cause: Cause) -> str:
    """'rank 2', 'ranks 0-3', 'node gpu7' or '' for a cause's culprits."""
    if cause.ranks:
        return f"rank {cause.ranks[0]}" if len(cause.ranks) == 1 else f"ranks {rank_ranges(cause.ranks)}"
    if cause.nodes:
        return ("node " if len(cause.nodes) == 1 else "nodes ") + ", ".join(cause.nodes)
    return ""


def answer_line(report: Report, limit: int = 160) -> str:
    """One line that answers the question: who, which cause, how sure, and the summary."""
    if report.command == "preflight":
        failed = [c for c in _checks(report) if c.get("status") == "fail"]
        if not failed:
            return "preflight PASS: no check failed"
        return cut(f"preflight FAIL: {', '.join(str(c.get('name')) for c in failed)}"
                   + (f" ({report.causes[0].id})" if report.causes else ""), limit)
    if not report.causes:
        return "no cause found: no rule matched this evidence"
    top = report.causes[0]
    sig = signal_of(report, top)
    head = f"{who(top) + ': ' if who(top) else ''}{top.id}{f' ({sig})' if sig else ''}"
    head += f" [{top.confidence}, {top.score:.2f}]"
    return cut(f"{head}: {tidy(top.summary)}", limit)


def _checks(report: Report) -> list[dict[str, Any]]:
    return [e for e in report.evidence or [] if isinstance(e, dict) and e.get("kind") == "host_check"]


def record_was_used(report: Report) -> bool:
    """Whether torchrun's failure table names an error file (the entry point had ``@record``)."""
    for cause in report.causes:
        for ev in cause.evidence:
            text = ev.text
            at = text.find("error_file:")
            if at >= 0:
                value = text[at + len("error_file:"):].split()
                if value and value[0] not in ("<N/A>", "|"):
                    return True
    return False


def drop_record_advice(items: list[str], report: Report) -> list[str]:
    """Leave out advice to add ``@record`` when the run already had it."""
    if not record_was_used(report):
        return items
    return [i for i in items if "@record" not in i]


def unique(items: list[str]) -> list[str]:
    """Items in order, each once (whitespace-insensitive)."""
    seen: set[str] = set()
    out = []
    for item in items:
        key = " ".join(item.split())
        if key and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def alternative_summary(cause: Cause, earlier: list[Cause]) -> str:
    """An alternative's summary without the sentence it shares with a cause shown above it."""
    text = cause.summary
    for prev in earlier:
        if text.startswith(prev.summary):
            rest = text[len(prev.summary):].strip(" ()")
            return rest or "the same evidence as above"
    return text


def danger_lines(report: Report) -> list[str]:
    """Checkpoints whose pickle names callables outside the allow-list, naming the globals (shown first)."""
    out = []
    sections = [report.checkpoint] if report.checkpoint else []
    if report.checkpoint and isinstance(report.checkpoint.get("other"), dict):
        sections.append(report.checkpoint["other"])
    for sec in sections:
        names = sec.get("dangerous_globals") or sec.get("suspicious_globals") or []
        if names:
            out.append(f"DANGER: {sec.get('path') or 'the checkpoint'} names callables outside the allow-list: "
                       f"{', '.join(map(str, names))}; not loaded (torch.load(weights_only=False) would run them)")
    if not out:  # no checkpoint section: the command's notes say it
        out = [n for n in report.notes if "allow-list" in n and "pickle" in n]
    return out
