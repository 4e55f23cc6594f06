"""Raise a chained exception from the entry point, with torchelastic's and/or diagnose's @record.

RECORD: none | diagnose | elastic | both (diagnose outside) | both-inner (diagnose inside);
HOOK=1 installs diagnose; NO_TORCH=1 makes torch unimportable; NO_PYDANTIC=1 makes pydantic unimportable.
"""

import os
import sys

if os.environ.get("NO_TORCH") == "1":
    sys.modules["torch"] = None  # type: ignore[assignment]
if os.environ.get("NO_PYDANTIC") == "1":
    sys.modules["pydantic"] = None  # type: ignore[assignment]
HOOK = os.environ.get("HOOK") == "1"
RECORD = os.environ.get("RECORD", "none")
if HOOK:
    import diagnose

    diagnose.install(report_dir=os.environ["REPORT_DIR"], timeout=float(os.environ.get("BOUND", "5")))
if RECORD in ("elastic", "both", "both-inner"):
    from torch.distributed.elastic.multiprocessing.errors import record as elastic_record


def identity(fn):
    return fn


class BatchError(RuntimeError):
    """A user exception type with a custom module."""


def load(i):
    try:
        return [1, 2][i]
    except IndexError:
        raise KeyError(f"batch {i}")  # noqa: B904  (implicit chaining: __context__)


def main():
    print("step 0", flush=True)
    try:
        load(5)
    except KeyError as exc:
        raise BatchError("simulated bad batch on rank 1 at step 3") from exc


if __name__ == "__main__":
    ours = diagnose.record if HOOK else identity
    entry = main
    if RECORD in ("diagnose", "both"):
        entry = ours(entry)
    if RECORD in ("elastic", "both", "both-inner"):
        entry = elastic_record(entry)
    if RECORD == "both-inner":
        entry = ours(entry)
    if RECORD == "watch":
        with diagnose.watch() if HOOK else open(os.devnull):
            entry()
    else:
        entry()
