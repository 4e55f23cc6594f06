#!/usr/bin/env python3
"""Score `diagnose logs` on the single-process corpus per failure mode (issue 10's outside-corpus bar).

usage: measure.py [CORPUS_DIR] [--cmd "diagnose logs {input} --json"] [--quiet] [--min F]

A case is right when the report's symptom is the labelled one AND its first cause is in the
labelled family: one of the case's `causes` or `acceptable` IDs, or a finer cause whose
`refines` names one of them (a `user_code_error` refining `rank_failure` counts for
`rank_failure`). Prints one line per case, then the share per `mode` and the mean over modes;
the last line is "modes_mean=M cases=N right=R". Exits 1 when --min is given and not met.
"""
import argparse
import json
import shlex
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run(cmd_template: str, case_dir: Path, symptom: str) -> dict | None:
    cmd = [part.replace("{input}", str(case_dir / "input")).replace("{symptom}", symptom)
           for part in shlex.split(cmd_template)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return None


def first_cause(report: dict) -> tuple[str | None, str | None]:
    causes = report.get("causes") or []
    if not causes:
        return None, None
    first = causes[0]
    return first.get("id"), first.get("refines")


def judge(case: dict, report: dict | None) -> tuple[bool, bool, str]:
    """(symptom right, cause in family, what the engine said)."""
    if report is None:
        return False, False, "no JSON"
    family = {*case["causes"], *case.get("acceptable", [])}
    cid, refines = first_cause(report)
    sym_ok = report.get("symptom") == case["symptom"]
    cause_ok = cid is not None and (cid in family or refines in family)
    said = f"{report.get('symptom')} / {cid}" + (f" (refines {refines})" if refines else "")
    return sym_ok, cause_ok, said


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus", nargs="?", default=str(HERE))
    ap.add_argument("--cmd", default="diagnose logs {input} --json")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--min", type=float, default=None)
    args = ap.parse_args()
    cases = sorted(p.parent for p in Path(args.corpus).glob("*/case.json"))
    per_mode: dict[str, list[bool]] = defaultdict(list)
    for case_dir in cases:
        case = json.loads((case_dir / "case.json").read_text())
        report = run(args.cmd, case_dir, case["symptom"])
        sym_ok, cause_ok, said = judge(case, report)
        ok = sym_ok and cause_ok
        per_mode[case["mode"]].append(ok)
        if not args.quiet:
            mark = "ok  " if ok else ("SYM " if not sym_ok else "CAUS")
            want = f"{case['symptom']} / {'|'.join(case['causes'] + case.get('acceptable', []))}"
            print(f"{mark} {case['mode']:18} {case['id']:58} got {said}   want {want}")
    print()
    shares = {}
    for mode in sorted(per_mode):
        hits = per_mode[mode]
        shares[mode] = sum(hits) / len(hits)
        print(f"{mode:18} {sum(hits):3}/{len(hits):<3} {shares[mode]:.3f}")
    mean = sum(shares.values()) / len(shares) if shares else 0.0
    right = sum(sum(h) for h in per_mode.values())
    print(f"modes_mean={mean:.3f} cases={len(cases)} right={right}")
    if args.min is not None and mean < args.min:
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
