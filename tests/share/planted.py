"""Real log formats (torchrun, NCCL, Ray, c10d, Slurm, tracebacks) with planted identifiers of every kind."""

from __future__ import annotations

PLANTED_LOG = """\
[2024-03-01 10:00:00,123] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) local_rank: 0 (pid: 622423) of binary: /home/ewulff/miniconda3/envs/mlpf/bin/python
Traceback (most recent call last):
  File "/home/ewulff/miniconda3/envs/mlpf/lib/python3.10/site-packages/torch/distributed/run.py", line 806, in main
  File "/scratch/ewulff/particleflow/mlpf/pyg_pipeline.py", line 154, in main
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
Root Cause (first observed failure):
[0]:
  time      : 2024-03-01_10:00:00
  host      : gpu47.cluster.uni-example.de
  rank      : 3 (local_rank: 0)
  exitcode  : -9 (pid: 622423)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 622423
============================================================
node23:12098:12141 [2] NCCL INFO NET/Socket : Using [0]eth0:10.30.112.212<51234>
node23:12098:12141 [2] NCCL INFO Bootstrap : Using ib0:172.20.5.9<0>
node23:12098:12141 [2] transport/nvls.cc:244 NCCL WARN Cuda failure 1 'invalid argument'
(ActorModelRayActor pid=7449, ip=10.1.59.27) [rank9]:[E416 13:21:26.967375581 ProcessGroupNCCL.cpp:616] [Rank 1] Watchdog caught collective operation timeout
[W socket.cpp:601] [c10d] The client socket has failed to connect to [::ffff:10.200.3.4]:41170 (errno: 110).
[W socket.cpp:601] [c10d] The client socket has failed to connect to [gpu48]:29511 (errno: 110).
[I socket.cpp:884] [c10d] The client socket has connected to [fd12:3456:789a:1::42]:47001 on [gpu47.cluster.uni-example.de]:33110.
export MASTER_ADDR=10.28.1.16 MASTER_PORT=29533
torchrun --nnodes=2 --nproc_per_node=4 --master_port 31377 --rdzv_endpoint=node08.hpc.megacorp.internal:29401 --rdzv_id=jobrun7781 train.py
JOBID PARTITION     NAME     USER ST       TIME  NODES NODELIST(REASON)
42859712       m9gpart      job.sh   catalys1  R         0:25   2 m9g-1-[3-4]
slurmstepd: error: *** JOB 42859712 ON m9g-1-3 CANCELLED AT 2024-03-01T10:00:00 DUE TO TIME LIMIT ***
srun: error: m9g-1-4: task 3: Killed
#SBATCH -p a100q -A proj-xyz123
#SBATCH --partition=gpuqueue7 --account=acct77lab
sbatch: Submitted batch job 42859713
See slurm-42859714.out and ~qfyuser/runs, PYTHONPATH=/opt/x:/gpfs/projsecret/lib
ewulff@node23:~$ nvidia-smi -q | grep GPU-1a2b3c4d-1111-2222-3333-444455556666
mail first.last@uni-example.de about it; SLURM_JOB_ID=42859715 USER=catalys1 SLURM_JOB_ACCOUNT=acct88lab
Sending process 31337 closing signal SIGTERM
C:\\Users\\winuser9\\AppData\\train.py failed; log in /Users/macuser7/Desktop/run.log
"""

# Every identifier planted above; none may survive redaction, in any format.
PLANTED = [
    "gpu47", "gpu48", "cluster.uni-example.de", "uni-example", "node23", "node08", "megacorp", "m9g-1-3",
    "m9g-1-4", "m9g-1-[3-4]", "10.30.112.212", "172.20.5.9", "10.1.59.27", "10.200.3.4", "fd12:3456:789a:1::42",
    "10.28.1.16", "51234", "41170", "29511", "47001", "33110", "29533", "31377", "29401", "ewulff", "catalys1",
    "qfyuser", "winuser9", "macuser7", "first.last", "particleflow", "projsecret", "m9gpart", "a100q",
    "gpuqueue7", "proj-xyz123", "acct77lab", "acct88lab", "42859712", "42859713", "42859714", "42859715",
    "jobrun7781", "622423", "12098", "12141", "7449", "31337", "1a2b3c4d-1111",
]
