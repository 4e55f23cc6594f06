"""The command line: the only module that parses argv, prints, or chooses exit codes.

Start-up imports only the standard library; everything else loads inside the command that
needs it (each such import says so). Exit status (CONTRACT.md): 0 the analysis ran, 3 it
found what the user asked to fail on, 2 bad usage or unusable input/output, 1 internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_FOUND = 0, 1, 2, 3
LEVELS = ("low", "medium", "high")
REPORTING = ("logs", "hang", "report")  # commands with --markdown and --fail-on

EXAMPLES = {
    "logs": "diagnose logs slurm-1234.out rank*.log\n  diagnose logs ./run-dir --symptom hang --json\n"
            "  kubectl logs pod/trainer-0 | diagnose logs -\n  diagnose logs --slurm 1234 --markdown",
    "hang": "diagnose hang --job 1234\n  diagnose hang --job pid:4242 --save ./evidence --fail-on high",
    "preflight": "diagnose preflight --nproc 8 --port 29500",
    "checkpoint": "diagnose checkpoint ckpt/step-1000.pt\n  diagnose checkpoint before.pt after.pt --json",
    "scaling": "diagnose scaling run-1gpu.log run-8gpu.log",
    "report": "diagnose report diagnose-reports/ --html report.html",
    "record": "diagnose record ./run-dir > RUN_RECORD.md",
    "schema": "diagnose schema > report.schema.json",
    "rules": "diagnose rules list\n  diagnose rules show rank-killed-while-peers-waited\n  diagnose rules check --rules ./site-rules",
    "completion": "diagnose completion bash > /etc/bash_completion.d/diagnose\n"
                  "  diagnose completion zsh > ~/.zfunc/_diagnose",
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version  # start-up: only for --version

    try:
        return version("torchdist-diagnose")
    except PackageNotFoundError:
        return "unknown"


def _symptom(value: str) -> str:
    from diagnose.vocab import SYMPTOM_WORDS, SYMPTOMS, resolve_symptom  # start-up: runs while parsing

    if resolve_symptom(value):
        return value
    raise argparse.ArgumentTypeError(f"unknown symptom {value!r}; use one of: "
                                     f"{', '.join(SYMPTOM_WORDS)} or {', '.join(SYMPTOMS)}")


def _sub(sub: Any, name: str, help: str, parents: list[argparse.ArgumentParser] = ()) -> argparse.ArgumentParser:
    return sub.add_parser(name, parents=list(parents), help=help, description=help,
                          epilog=f"example:\n  {EXAMPLES[name]}", formatter_class=argparse.RawDescriptionHelpFormatter)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="diagnose", description="Diagnose distributed PyTorch runs: ranked causes, "
                                "culprit ranks, the evidence lines and the first fix.",
                                epilog="example:\n  diagnose logs ./run-dir", formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", action="version", version=f"diagnose {_version()}", help="print the version")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print the JSON report (schema: diagnose schema)")
    common.add_argument("--html", type=Path, metavar="FILE", help="also write a self-contained HTML report to FILE")
    common.add_argument("--redact", action="store_true",
                        help="replace hosts, IPs, ports, users, paths, job ids, pids and secrets by placeholders")
    common.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colours and boxes: auto (on a terminal, unless NO_COLOR is set), always, never")
    common.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    common.add_argument("--rules", type=Path, action="append", default=[], metavar="DIR",
                        help="extra rule folder (repeatable; honoured by logs)")
    rep = argparse.ArgumentParser(add_help=False)
    rep.add_argument("--markdown", action="store_true",
                     help="print a Markdown report to paste into an issue (redacted unless --no-redact)")
    rep.add_argument("--no-redact", action="store_true", help="with --markdown: keep identifiers as they are")
    rep.add_argument("--fail-on", choices=LEVELS, metavar="LEVEL",
                     help="exit 3 when a cause of this confidence or higher is found (low, medium, high)")
    logs = _sub(sub, "logs", "post-mortem: diagnose the files a run left behind", [common, rep])
    logs.add_argument("paths", nargs="*", type=Path, metavar="PATH",
                      help="log files or folders (searched recursively); - reads standard input")
    logs.add_argument("--symptom", type=_symptom, help="what you saw: a symptom id or hang/slow/oom/crash/diverged/resume")
    logs.add_argument("--slurm", metavar="JOBID", help="read the output and error files of this finished Slurm job")
    logs.add_argument("--evidence", action="store_true",
                      help="print every piece of evidence found (JSON Lines: kind, signature, source, line, rank, "
                           "text) instead of a report")
    hang = _sub(sub, "hang", "diagnose a job that is hung right now", [common, rep])
    hang.add_argument("--job", required=True, metavar="ID",
                      help="Slurm job id, torchrun run id or launcher pid (slurm:ID, torchrun:ID, pid:ID force the kind)")
    hang.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS", help="time bound of the probe (10)")
    hang.add_argument("--save", type=Path, metavar="DIR", help="keep everything the probe collected in DIR")
    hang.add_argument("--native", action="store_true",
                      help="also take native frames (shows the DDP reducer; pauses each rank ~1-2 s)")
    hang.add_argument("--local", action="store_true", help=argparse.SUPPRESS)  # one node, no fan-out (srun)
    pre = _sub(sub, "preflight", "check this host (and every node of the allocation) before a launch; "
               "exit 3 when a check fails", [common])
    pre.add_argument("--port", type=int, help="rendezvous port (default: MASTER_PORT, the --rdzv-endpoint port, 29500)")
    pre.add_argument("--nproc", "--nproc-per-node", type=int, help="processes per node (default: PET_NPROC_PER_NODE)")
    pre.add_argument("--workers", type=int, help="dataloader workers per process")
    pre.add_argument("--local", action="store_true", help=argparse.SUPPRESS)  # this node only (srun fan-out)
    ckpt = _sub(sub, "checkpoint", "what a checkpoint holds and lacks (never unpickled)", [common])
    ckpt.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="a checkpoint, or two to compare")
    ckpt.add_argument("--model", metavar="MODULE:FACTORY",
                      help="compare the checkpoint's model state with the state_dict of the model this callable "
                           "returns (mypkg.models:build_model or path/to/model.py:build); this IMPORTS AND RUNS "
                           "your model code (built on the meta device when it can be); the checkpoint itself is "
                           "still never unpickled")
    scal = _sub(sub, "scaling", "batch contract, efficiency and step-time model", [common])
    scal.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                      help="step-time logs, profiler traces, run records (JSON/YAML)")
    scal.add_argument("--symptom", type=_symptom, help="what you saw (slow, slow_step, slow_scaling, ...)")
    rpt = _sub(sub, "report", "merge the per-rank reports of the library hook", [common, rep])
    rpt.add_argument("directory", type=Path, metavar="DIR", help="folder the hook wrote (searched recursively)")
    rec = _sub(sub, "record", "the public run record (Markdown, redacted)")
    rec.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="the run's files or folders")
    rec.add_argument("--no-redact", action="store_true", help="keep identifiers as they are")
    rec.add_argument("--redact", action="store_true", help="replace identifiers (the default)")
    rec.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    _sub(sub, "schema", "print the JSON schema of the report")
    rules = _sub(sub, "rules", "list, show, check rules; generate docs")
    rules.add_argument("action", choices=["list", "show", "check", "docs"], help="what to do")
    rules.add_argument("rule_id", nargs="?", help="the rule to show")
    rules.add_argument("--rules", type=Path, action="append", default=[], metavar="DIR", help="extra rule folder")
    rules.add_argument("--out", type=Path, default=Path("docs"), help="folder for generated docs (docs)")
    comp = _sub(sub, "completion", "print a shell completion script (generated from this parser)")
    comp.add_argument("shell", choices=("bash", "zsh"), help="the shell")
    return p


class UsageError(Exception):
    """A flag the command cannot honour, or an output it cannot write: exit 2."""


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `diagnose ... | head`: the reader left; not an error
        _silence_stdout()
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the one place errors become exit codes
        return _error(exc, args)


def _error(exc: Exception, args: argparse.Namespace) -> int:
    from diagnose.errors import ConfigError, DiagnoseError, ProbeError, RuleSetError  # start-up: dataclasses

    if getattr(args, "debug", False):
        raise exc
    if isinstance(exc, UsageError):
        print(f"diagnose: {exc}", file=sys.stderr)
        return EXIT_USAGE
    if isinstance(exc, RuleSetError):
        print(str(exc), file=sys.stderr)
        return EXIT_USAGE
    if isinstance(exc, (ConfigError, ProbeError)):
        print(f"diagnose: {exc}", file=sys.stderr)
        return EXIT_USAGE
    kind = "error" if isinstance(exc, DiagnoseError) else f"internal error ({type(exc).__name__})"
    print(f"diagnose: {kind}: {str(exc).splitlines()[0] if str(exc) else ''}", file=sys.stderr)
    return EXIT_INTERNAL


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _refuse(args: argparse.Namespace) -> None:
    """Flags the command cannot honour are refused, never ignored."""
    cmd = args.command
    if getattr(args, "rules", None) and (cmd == "record" or getattr(args, "local", False)):
        where = "--local (the parent that merges the nodes runs the rules)" if cmd != "record" else "record"
        raise UsageError(f"--rules is not used by {where}")
    if getattr(args, "markdown", False) and getattr(args, "json", False):
        raise UsageError("--json and --markdown both print to standard output: choose one")
    if getattr(args, "no_redact", False) and cmd != "record" and not getattr(args, "markdown", False):
        raise UsageError("--no-redact applies to --markdown (the text and JSON are not redacted unless --redact)")
    if getattr(args, "no_redact", False) and getattr(args, "redact", False):
        raise UsageError("--redact and --no-redact contradict each other")
    if cmd == "logs":
        if args.slurm and args.paths:
            raise UsageError("give either PATH... or --slurm JOBID, not both")
        if not args.slurm and not args.paths:
            raise UsageError("diagnose logs needs PATH... (- for standard input) or --slurm JOBID")
        if args.paths.count(Path("-")) > 1:
            raise UsageError("standard input (-) can be read once")
    if cmd == "checkpoint" and not 1 <= len(args.paths) <= 2:
        raise UsageError("diagnose checkpoint takes one checkpoint, or two to compare")


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "schema":
        from diagnose.output.report import report_schema  # start-up: pydantic, only for this command

        print(json.dumps(report_schema(), indent=2))
        return EXIT_OK
    if args.command == "rules":
        from diagnose.commands.rules import run_rules  # start-up: the rule loader, only for this command

        return run_rules(args.action, args.rule_id, args.rules, args.out, sys.stdout)
    if args.command == "completion":
        from diagnose.output.completion import completion_script  # start-up: shtab, only for this command

        sys.stdout.write(completion_script(_parser(), args.shell))
        return EXIT_OK
    _refuse(args)
    from diagnose.commands.inputs import Inputs  # start-up: reading stdin and Slurm files, only for commands

    with Inputs(args) as inputs:
        from diagnose.output.progress import progress  # start-up: rich, after argument parsing

        with progress(args.command):
            report = _run_command(args, inputs)
        if isinstance(report, str):
            sys.stdout.write(report if report.endswith("\n") else report + "\n")
            sys.stdout.flush()
            return EXIT_OK
        inputs.tidy(report)
        code = _emit(report, args, inputs)
    sys.stdout.flush()
    return code


def _check_paths(paths: list[Path]) -> None:
    from diagnose.errors import ConfigError  # start-up: dataclasses, after parsing

    for p in paths:
        if not p.exists() and not p.is_symlink():
            raise ConfigError(f"no such file or folder: {p}")


def _run_command(args: argparse.Namespace, inputs: Any) -> Any:
    cmd = args.command
    if cmd == "logs":
        _check_paths(inputs.paths)
        if args.evidence:
            from diagnose.commands.logs import run_evidence  # start-up: the log scan, loaded for this command

            return run_evidence(inputs.paths, rule_dirs=args.rules)
        from diagnose.commands.logs import run_logs  # start-up: the engine, loaded for this command

        return run_logs(inputs.paths, symptom=args.symptom, rule_dirs=args.rules)
    if cmd == "hang":
        from diagnose.commands.hang import run_hang  # start-up: the live probe, loaded for this command

        return run_hang(args.job, timeout=args.timeout, save=args.save, native=args.native, local=args.local,
                        rule_dirs=args.rules)
    if cmd == "preflight":
        # start-up: the host checks, loaded for this command
        from diagnose.commands.preflight import run_preflight

        return run_preflight(port=args.port, nproc=args.nproc, workers=args.workers, local=args.local,
                             rule_dirs=args.rules)
    if cmd == "checkpoint":
        _check_paths(args.paths)
        # start-up: checkpoint readers, for this command
        from diagnose.commands.checkpoint import run_checkpoint

        return run_checkpoint(args.paths, model=args.model, rule_dirs=args.rules)
    if cmd == "scaling":
        _check_paths(args.paths)
        from diagnose.commands.scaling import run_scaling  # start-up: step-time model, for this command

        return run_scaling(args.paths, symptom=args.symptom, rule_dirs=args.rules)
    if cmd == "report":
        _check_paths([args.directory])
        from diagnose.commands.report import run_report  # start-up: the merger, for this command

        return run_report(args.directory, rule_dirs=args.rules)
    if cmd == "record":
        _check_paths(args.paths)
        from diagnose.commands.record import run_record  # start-up: the engine, for this command
        from diagnose.output.redact import Redactor  # start-up: pydantic and patterns, for this command

        redactor = None
        if not args.no_redact:
            redactor = Redactor()
            inputs.teach(redactor)
        return run_record(args.paths, redactor=redactor)
    raise AssertionError(cmd)


def _exit_code(report: Any, args: argparse.Namespace) -> int:
    if report.command == "preflight":
        if getattr(args, "local", False):  # one node of the srun fan-out: the parent decides
            return EXIT_OK
        failed = any(isinstance(e, dict) and e.get("kind") == "host_check" and e.get("status") == "fail"
                     for e in report.evidence or [])
        return EXIT_FOUND if failed else EXIT_OK
    level = getattr(args, "fail_on", None)
    if level and any(LEVELS.index(c.confidence) >= LEVELS.index(level) for c in report.causes):
        return EXIT_FOUND
    return EXIT_OK


def _emit(report: Any, args: argparse.Namespace, inputs: Any) -> int:
    # start-up: pydantic and patterns, for output
    from diagnose.output.redact import Redactor, redact_report_model

    code = _exit_code(report, args)
    markdown = getattr(args, "markdown", False)
    names = inputs.names
    if args.redact or (markdown and not args.no_redact):
        redactor = Redactor()
        inputs.teach(redactor)
        report = redact_report_model(report, redactor)
        names = [redactor.redact(n) for n in names]
    html_error = None
    if args.html:
        from diagnose.output.html import write_html  # start-up: only with --html

        try:
            write_html(report, args.html, inputs=names, version=_version())
        except OSError as exc:
            html_error = f"cannot write --html {args.html}: {exc.strerror or exc}"
    if markdown:
        from diagnose.output.markdown import render_markdown  # start-up: only with --markdown

        sys.stdout.write(render_markdown(report, version=_version(), inputs=names))
    elif args.json:
        sys.stdout.write(json.dumps(report.to_json_dict(), indent=2, ensure_ascii=False) + "\n")
    else:
        from diagnose.output.text import print_report  # start-up: rich, only for the text report

        if report.command == "preflight":
            # start-up: preflight's own checklist, for this command
            from diagnose.commands.preflight import render_checklist

            sys.stdout.write(render_checklist(report) + "\n\n")
        print_report(report, color=args.color)
    if html_error:
        sys.stdout.flush()
        print(f"diagnose: {html_error}", file=sys.stderr)
        return EXIT_USAGE
    return code


if __name__ == "__main__":
    sys.exit(main())
