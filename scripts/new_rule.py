#!/usr/bin/env python3
"""Scaffold a rule in the house shape: the YAML, its fixture file with one firing and one quiet case.

usage: scripts/new_rule.py FAMILY RULE-ID [--rules DIR]

The scaffold is valid as written (it fires on a Python exception) so `diagnose rules check --rules DIR`
passes at once; edit the conditions, outcome, texts and fixtures to the pattern you are adding.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

RULE = """\
id: {id}
title: TODO one line naming the observed pattern
status: experimental
symptoms: [crash]
runbook: []
requires: [log_line]
match:
- has_signature:
    names: [python_exception]
  as: hit
outcomes:
- cause: rank_failure
  confidence: low
  culprits: hit
  message: 'rank {{hit.ranks}} raised {{hit.exc_type}}: TODO say what the evidence shows'
explain:
  why: TODO why this evidence points at this cause (how the tools really behave).
fix: TODO the first thing to try.
next_steps:
- TODO what to look at next.
"""

TEST = """\
rule: {id}
cases:
  todo-situation-that-fires:
    evidence:
    - {{kind: log_line, signature: python_exception, rank: 1, text: 'ValueError: x', fields: {{exc_type: ValueError}}}}
    expect: {{fires: rank_failure, ranks: [1]}}
  todo-near-miss-that-stays-quiet:
    evidence:
    - {{kind: log_line, signature: nccl_version, rank: 1, text: 'NCCL version 2.21.5', fields: {{version: 2.21.5}}}}
    expect: quiet
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("family")
    ap.add_argument("rule_id")
    ap.add_argument("--rules", type=Path, default=Path(__file__).resolve().parent.parent / "rules")
    args = ap.parse_args(argv)
    if not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", args.rule_id):
        print("rule ids are kebab-case and name the observed pattern, e.g. rank-absent-from-collective", file=sys.stderr)
        return 2
    folder = args.rules / args.family
    rule, test = folder / f"{args.rule_id}.yaml", folder / f"{args.rule_id}.test.yaml"
    if rule.exists() or test.exists():
        print(f"{rule} already exists", file=sys.stderr)
        return 2
    folder.mkdir(parents=True, exist_ok=True)
    rule.write_text(RULE.format(id=args.rule_id))
    test.write_text(TEST.format(id=args.rule_id))
    print(f"wrote {rule} and {test}; then run: diagnose rules check && diagnose rules docs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
