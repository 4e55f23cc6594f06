"""IPython / Jupyter tracebacks: the header names the exception before the frames ("KeyError   Traceback
(most recent call last)"), frames are "path in func(args)" with a "---> N" marker (IPython 7) or
"File path:N, in func(args)" / "Cell In[3], line 5" (IPython 8). A paste cut before the final line is
still read from the header and the frames below it; a complete one is read once, from its last line."""

from __future__ import annotations

from pathlib import Path

from diagnose.commands.logs import evidence_records, run_logs
from diagnose.probes.logs.probe import LogProbe, log_signatures

IPYTHON7_CUT_AT_SAVE = """\
---------------------------------------------------------------------------
PermissionError                           Traceback (most recent call last)
/tmp/ipykernel_811/1234.py in <module>
----> 1 trainer.fit()

~/work/proj/trainer.py in fit(self)
     40         for epoch in range(self.epochs):
     41             self.run_epoch()
---> 42             self.save_checkpoint(epoch)

~/work/proj/trainer.py in save_checkpoint(self, epoch)
     60     def save_checkpoint(self, epoch):
---> 61         torch.save(self.model.state_dict(), self.path)
"""

IPYTHON8_COMPLETE = """\
---------------------------------------------------------------------------
IndexError                                Traceback (most recent call last)
Cell In[4], line 2
      1 for i, batch in enumerate(loader):
----> 2     y = labels[i]

IndexError: list index out of range
"""


def _records(path: Path) -> list[dict]:
    return evidence_records(LogProbe(log_signatures(), workers=1).collect([path]).evidence)


def _write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "notebook.txt").write_text(text)
    return tmp_path


def test_cut_notebook_traceback_is_read_from_header_and_frames_below(tmp_path: Path) -> None:
    report = run_logs([_write(tmp_path, IPYTHON7_CUT_AT_SAVE)])
    assert report.symptom == "crash" and report.causes[0].id == "filesystem"
    header = [r for r in _records(tmp_path) if r.get("signature") == "python_exception_notebook"]
    assert header and header[0]["fields"]["exc_type"] == "PermissionError"
    fields = header[0]["fields"]
    assert "save_checkpoint" in fields["frames"] and fields["frame_path"] == "~/work/proj/trainer.py"
    assert fields["frame_line"] == 61


def test_complete_notebook_traceback_counts_its_exception_once(tmp_path: Path) -> None:
    report = run_logs([_write(tmp_path, IPYTHON8_COMPLETE)])
    top = report.causes[0]
    assert report.symptom == "crash" and (top.refines or top.id) == "rank_failure"
    assert [c.id for c in report.causes].count(top.id) == 1
    final = [r for r in _records(tmp_path) if r.get("signature") == "python_exception"]
    assert final and final[0]["fields"]["frame_path"] == "<cell>"
