"""A real CPU training run whose Dataset sleeps in __getitem__: input-bound by construction.

Usage: python slow_data.py OUT_DIR [SLEEP_S]. Writes train.log (plain step prints with
data_time / step_time / loss / lr) and trace.json (torch.profiler Chrome trace).
"""

import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, schedule
from torch.utils.data import DataLoader, Dataset


class SlowDataset(Dataset):
    def __init__(self, sleep: float) -> None:
        self.sleep = sleep

    def __len__(self) -> int:
        return 512

    def __getitem__(self, i: int):
        time.sleep(self.sleep)
        return torch.randn(64), torch.randint(0, 4, ())


def main() -> None:
    out, sleep = Path(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 0.004
    out.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loader = DataLoader(SlowDataset(sleep), batch_size=8)
    log = (out / "train.log").open("w")
    print("world_size: 1 batch_size: 8 gradient_accumulation_steps: 1", file=log)
    sched = schedule(wait=1, warmup=1, active=4, repeat=1)
    with profile(activities=[ProfilerActivity.CPU], schedule=sched,
                 on_trace_ready=lambda p: p.export_chrome_trace(str(out / "trace.json"))) as prof:
        t_end = time.perf_counter()
        for step, (x, y) in enumerate(loader):
            t_data = time.perf_counter()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            t_step = time.perf_counter()
            print(f"epoch: 0 step: {step} loss: {loss.item():.4f} lr: 5.0e-02 "
                  f"data_time: {t_data - t_end:.4f} step_time: {t_step - t_end:.4f}", file=log, flush=True)
            t_end = t_step
            prof.step()
            if step == 11:
                break
    log.close()


if __name__ == "__main__":
    main()
