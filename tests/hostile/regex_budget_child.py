"""Child of test_regex_budget: time every signature on adversarial long lines, printing as it goes.

Python's ``re`` cannot be interrupted, so the parent kills this process when it runs past the
budget; the last ``START`` line names the signature that was running."""

from __future__ import annotations

import sys
import time

from diagnose.probes.logs.scanner import MAX_LINE, Scanner
from diagnose.probes.logs.signatures import Signature, SignatureSet, load_signatures

SIZE = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000


def adversarial(sig: Signature) -> list[bytes]:
    """Long lines built from the signature's own examples and from runs of the characters patterns repeat."""
    out = []
    for ex in sig.examples[:1]:
        line = ex.line.encode("utf-8", "replace")
        out.append((line + b" ") * (SIZE // (len(line) + 1) + 1))
        cut = line[: max(1, len(line) - 3)]
        out.append((cut + b" ") * (SIZE // (len(cut) + 1) + 1))
        out.append(line[:1] * SIZE)
    for unit in (b"a", b"9", b" ", b"a ", b"[rank0]:", b"0.", b"*"):
        out.append(unit * (SIZE // len(unit)))
    return [b[:SIZE] for b in out]


def timed(fn, *args) -> float:  # noqa: ANN001
    t = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t


def main() -> None:
    sigs = load_signatures().signatures
    base = Signature(name="baseline", component="test", description="trivial", detect="(?:qz|zq)x",
                     examples=[{"line": "qzx"}], counter_examples=["x"])
    base_scan = Scanner(SignatureSet([base]), engine="re")
    lines = adversarial(sigs[0])
    baseline = max(min(timed(base_scan.scan_buffer, b) for _ in range(3)) for b in lines)
    print(f"BASELINE {baseline:.6f}", flush=True)
    for sig in sigs:
        print(f"START {sig.name}", flush=True)
        scanner = Scanner(SignatureSet([sig]), engine="re")
        worst = 0.0
        for buf in adversarial(sig):
            worst = max(worst, timed(scanner.scan_buffer, buf))  # the fallback path over the whole line
            window = buf[:MAX_LINE].decode("utf-8", "replace")
            worst = max(worst, timed(sig.match, window) * (SIZE / MAX_LINE))  # detect + extract on a hit window
        print(f"DONE {sig.name} {worst:.6f}", flush=True)


if __name__ == "__main__":
    main()
