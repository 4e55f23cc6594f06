"""Step-time lines as a content parser of the log probe's single pass (no second read of any file)."""

from __future__ import annotations

from diagnose.probes.logs.content import ContentResult, FileView
from diagnose.probes.steptime.probe import command_runs, parse_step_lines
from diagnose.probes.steptime.scan_steps import step_candidate_lines
from diagnose.probes.steptime.spec import steptime_spec

STEP_PARSE_MAX_BYTES = 4 << 20


class StepTimeParser:
    """StepMetrics of the files up to 4 MiB (bigger ones are left to `diagnose scaling`, with a note)."""

    name = "steptime"

    def wants(self, view: FileView) -> bool:
        return True

    def parse(self, view: FileView) -> ContentResult:
        if not view.complete or view.size > STEP_PARSE_MAX_BYTES:
            return ContentResult(notes=[f"{view.path}: step-time lines not parsed (file over "
                                        f"{STEP_PARSE_MAX_BYTES >> 20} MiB): use `diagnose scaling` on it"])
        spec = steptime_spec()
        runs = command_runs(bytes(view.data), view.path)  # a transcript of two or more runs: one run per command
        return ContentResult(evidence=parse_step_lines(step_candidate_lines(view.data, spec), view.path, runs))
