"""The identifier forms NCCL, torchrun, Slurm and env dumps really print, each with what must not survive."""

from __future__ import annotations

# (form, line as the tool prints it, identifiers planted in it)
FORMS: list[tuple[str, str, list[str]]] = [
    ("ipv6 after an interface",
     "trn-a7:4011:4050 [0] NCCL INFO NET/Socket : Using [0]eth0:fe80::1ff:fe23:4567:890a%eth0<0>",
     ["fe80::1ff:fe23:4567:890a", "1ff:fe23:4567:890a"]),
    ("ipv6 glued in an NCCL field",
     "trn-a7:4011:4050 [0] NCCL WARN NET/IB : Got completion from peer 10.71.3.8<40211> with status=12 "
     "localGid ::ffff:10.71.3.9 remoteGids::ffff:10.71.3.10 hca mlx5_0",
     ["10.71.3.8", "40211", "10.71.3.9", "10.71.3.10"]),
    ("host:port", "[W socket.cpp:464] [c10d] The server socket has failed to listen on trnhost17:29517 (errno: 98)",
     ["trnhost17", "29517"]),
    ("tcp://host:port", "torch.distributed.DistNetworkError: failed to connect to tcp://headnode-4:29411",
     ["headnode-4", "29411"]),
    ("port after an ipv4-mapped address", "NCCL INFO Bootstrap : Using eth1:::ffff:10.1.2.3<29513>",
     ["10.1.2.3", "29513"]),
    ("fqdn glued to a rank file", "writing gpu12.cluster.uni-exmpl.de-rank0.log", ["gpu12", "uni-exmpl"]),
    ("relative project path", '  File "secretproj/models/llm_train.py", line 88, in forward', ["secretproj"]),
    ("kubernetes pod", "pytorchjob llama-sft-worker-3 exited, see pod train-7d9f8b6c5c-x2x7q",
     ["llama-sft-worker-3", "train-7d9f8b6c5c-x2x7q"]),
    ("bare short host", "lost the connection to gpu412 after 600 s", ["gpu412"]),
    ("mac address", "3: eth0: <BROADCAST> mtu 1500 link/ether 0c:42:a1:5e:77:9f brd ff:ff:ff:ff:ff:ff",
     ["0c:42:a1:5e:77:9f"]),
    ("secrets in an env dump", "HF_TOKEN=hf_QwErTyUiOpAsDfGhJkLzXcVbNm12 WANDB_API_KEY=8c1e55f0a9d24b7e",
     ["hf_QwErTyUiOpAsDfGhJkLzXcVbNm12", "8c1e55f0a9d24b7e"]),
    ("aws keys", "AWS_ACCESS_KEY_ID=AKIAQ3EXAMPLE7MN2XYZ AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY",
     ["AKIAQ3EXAMPLE7MN2XYZ", "wJalrXUtnFEMIK7MDENGbPxRfiCYzEXAMPLEKEY"]),
    ("secret in a url", "pip install git+https://jdoe88:ghp_s3cr3tT0k3nV4lu3xx@git.corp-intra.com/ml/lib.git",
     ["jdoe88", "ghp_s3cr3tT0k3nV4lu3xx"]),
    ("ipv6 link-local", "c10d: connected to [fe80::a00:27ff:fe4e:66a1%ib0]:29400", ["fe80::a00:27ff:fe4e:66a1"]),
    ("launcher temp path", "error_file: /tmp/torchelastic_k2j4h5l6/7d1c_run/attempt_0/3/error.json",
     ["torchelastic_k2j4h5l6", "7d1c_run"]),
    ("partition named in a folder", "#SBATCH --partition=mlq77 --account=grp-ai42", ["mlq77", "grp-ai42"]),
]

WATCHDOG = ("[rank1]:[E1129 10:02:11.340 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation "
            "timeout: WorkNCCL(SeqNum=4120, OpType=ALLREDUCE, NumelIn=26214400, NumelOut=26214400, "
            "Timeout(ms)=600000) ran for 600093 milliseconds before timing out.")
KILLED = ("[2024-03-01 10:00:00,123] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -9) "
          "local_rank: 0 (pid: 622423) of binary: /usr/bin/python")

ALL_PLANTED = [p for _, _, planted in FORMS for p in planted]
