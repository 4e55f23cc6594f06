"""The command line: the only module that parses argv, prints, or chooses exit codes.

Start-up imports only argparse; everything else loads inside the command that needs it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="diagnose", description="Diagnose distributed PyTorch runs: ranked causes, "
                                "culprit ranks, the evidence lines and the first fix.")
    sub = p.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print the JSON report")
    common.add_argument("--html", type=Path, metavar="FILE", help="also write a self-contained HTML report")
    common.add_argument("--redact", action="store_true", help="replace hosts, IPs, ports, users, paths, job ids")
    common.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    common.add_argument("--rules", type=Path, action="append", default=[], help="extra rule folder (repeatable)")
    logs = sub.add_parser("logs", parents=[common], help="post-mortem: diagnose the files a run left behind")
    logs.add_argument("paths", nargs="+", type=Path)
    logs.add_argument("--symptom", help="what you saw: a symptom id or hang/slow/oom/crash/diverged/resume")
    logs.add_argument("--evidence", action="store_true",
                      help="print every piece of evidence found (JSON Lines: kind, signature, source, line, rank, "
                           "text) instead of a report")
    hang = sub.add_parser("hang", parents=[common], help="diagnose a job that is hung right now")
    hang.add_argument("--job", required=True, help="Slurm job id, torchrun run id or launcher pid")
    hang.add_argument("--timeout", type=float, default=10.0)
    hang.add_argument("--save", type=Path)
    hang.add_argument("--native", action="store_true",
                      help="also take native frames (shows the DDP reducer; pauses each rank ~1-2 s)")
    hang.add_argument("--local", action="store_true", help=argparse.SUPPRESS)  # one node, no fan-out (srun)
    pre = sub.add_parser("preflight", parents=[common],
                         help="check this host (and every node of the allocation) before a launch")
    pre.add_argument("--port", type=int, help="rendezvous port (default: MASTER_PORT, the --rdzv-endpoint port, 29500)")
    pre.add_argument("--nproc", "--nproc-per-node", type=int, help="processes per node (default: PET_NPROC_PER_NODE)")
    pre.add_argument("--workers", type=int, help="dataloader workers per process")
    pre.add_argument("--local", action="store_true", help=argparse.SUPPRESS)  # this node only (srun fan-out)
    ckpt = sub.add_parser("checkpoint", parents=[common], help="what a checkpoint holds and lacks")
    ckpt.add_argument("paths", nargs="+", type=Path)
    ckpt.add_argument("--model", metavar="MODULE:FACTORY",
                      help="compare the checkpoint's model state with the state_dict of the model this callable "
                           "returns (mypkg.models:build_model or path/to/model.py:build); this IMPORTS AND RUNS "
                           "your model code (built on the meta device when it can be); the checkpoint itself is "
                           "still never unpickled")
    scal = sub.add_parser("scaling", parents=[common], help="batch contract, efficiency and step-time model")
    scal.add_argument("paths", nargs="+", type=Path)
    scal.add_argument("--symptom")
    rep = sub.add_parser("report", parents=[common], help="merge the per-rank reports of the library hook")
    rep.add_argument("directory", type=Path)
    rec = sub.add_parser("record", parents=[common], help="the public run record (Markdown)")
    rec.add_argument("paths", nargs="+", type=Path)
    rec.add_argument("--no-redact", action="store_true")
    sub.add_parser("schema", help="print the JSON schema of the report")
    rules = sub.add_parser("rules", help="list, show, check rules; generate docs")
    rules.add_argument("action", choices=["list", "show", "check", "docs"])
    rules.add_argument("rule_id", nargs="?")
    rules.add_argument("--rules", type=Path, action="append", default=[])
    rules.add_argument("--out", type=Path, default=Path("docs"))
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - the one place errors become exit codes
        from diagnose.errors import ConfigError, DiagnoseError, ProbeError, RuleSetError

        if getattr(args, "debug", False):
            raise
        if isinstance(exc, RuleSetError):
            print(str(exc), file=sys.stderr)
            return EXIT_USAGE
        if isinstance(exc, (ConfigError, ProbeError)):
            print(f"diagnose: {exc}", file=sys.stderr)
            return EXIT_USAGE
        kind = "error" if isinstance(exc, DiagnoseError) else f"internal error ({type(exc).__name__})"
        print(f"diagnose: {kind}: {str(exc).splitlines()[0] if str(exc) else ''}", file=sys.stderr)
        return EXIT_INTERNAL


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "schema":
        from diagnose.output.report import report_schema

        print(json.dumps(report_schema(), indent=2))
        return EXIT_OK
    if args.command == "rules":
        from diagnose.commands.rules import run_rules

        return run_rules(args.action, args.rule_id, args.rules, args.out, sys.stdout)
    report = _run_command(args)
    if isinstance(report, str):
        print(report)
        return EXIT_OK
    _emit(report, args)
    return EXIT_OK


def _check_paths(paths: list[Path]) -> None:
    from diagnose.errors import ConfigError

    for p in paths:
        if not p.exists() and not p.is_symlink():
            raise ConfigError(f"no such file or folder: {p}")


def _run_command(args: argparse.Namespace) -> Any:
    cmd = args.command
    if cmd == "logs":
        _check_paths(args.paths)
        if args.evidence:
            from diagnose.commands.logs import run_evidence

            return run_evidence(args.paths, rule_dirs=args.rules)
        from diagnose.commands.logs import run_logs

        return run_logs(args.paths, symptom=args.symptom, rule_dirs=args.rules)
    if cmd == "hang":
        from diagnose.commands.hang import run_hang

        return run_hang(args.job, timeout=args.timeout, save=args.save, native=args.native, local=args.local)
    if cmd == "preflight":
        from diagnose.commands.preflight import run_preflight

        return run_preflight(port=args.port, nproc=args.nproc, workers=args.workers, local=args.local)
    if cmd == "checkpoint":
        _check_paths(args.paths)
        from diagnose.commands.checkpoint import run_checkpoint

        return run_checkpoint(args.paths, model=args.model)
    if cmd == "scaling":
        _check_paths(args.paths)
        from diagnose.commands.scaling import run_scaling

        return run_scaling(args.paths, symptom=args.symptom)
    if cmd == "report":
        _check_paths([args.directory])
        from diagnose.commands.report import run_report

        return run_report(args.directory)
    if cmd == "record":
        _check_paths(args.paths)
        from diagnose.commands.logs import run_record

        return run_record(args.paths, redact=not args.no_redact)
    raise AssertionError(cmd)


def _emit(report: Any, args: argparse.Namespace) -> None:
    if args.redact:  # one redactor for every output, so placeholders agree across formats
        from diagnose.output.redact import redact_report_model

        report = redact_report_model(report)
    if args.html:
        from diagnose.output.html import write_html

        write_html(report, args.html)
    if args.json:
        sys.stdout.write(json.dumps(report.to_json_dict(), indent=2, ensure_ascii=False) + "\n")
        return
    if report.command == "preflight":
        from diagnose.commands.preflight import render_checklist

        print(render_checklist(report))
    if report.command == "scaling" and report.scaling:
        from diagnose.commands.scaling import render_scaling_table

        print(render_scaling_table(report.scaling))
    from diagnose.output.text import print_report

    print_report(report)


if __name__ == "__main__":
    sys.exit(main())
