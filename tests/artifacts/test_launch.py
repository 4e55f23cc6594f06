"""Launch commands, batch scripts, manifests and env dumps parsed into LaunchSpec fields."""

from __future__ import annotations

import pytest
from artifact_helpers import parsed

from diagnose.probes.artifacts import parse


def _one(text: str, launcher: str):
    specs = [e for e in parse("paste.txt", text)[0] if e.kind == "launch_spec" and e.launcher == launcher]
    assert specs, parse("paste.txt", text)
    return specs[0]


def test_real_torchrun_transcript() -> None:
    (spec,) = parsed("real/torchrun_transcript.txt", "launch_spec")
    assert (spec.launcher, spec.nodes, spec.procs_per_node, spec.rdzv_backend) == ("torchrun", 1, 2, "c10d")
    assert spec.rdzv_endpoint == "127.0.0.1:29631" and spec.script == "train_steps.py"
    assert spec.variables == {"OMP_NUM_THREADS": "1"} and spec.provenance.line == 1


def test_sbatch_script_without_srun() -> None:
    (spec,) = parsed("docs/sbatch_job.sh", "launch_spec")
    assert spec.launcher == "sbatch" and (spec.nodes, spec.procs_per_node, spec.gpus_per_node) == (2, 4, 4)
    assert spec.cpus_per_task == 8 and spec.mem == "0"
    assert spec.launches_tasks is False and spec.inner_launcher == "python"
    assert spec.variables["NCCL_DEBUG"] == "INFO" and spec.variables["OMP_NUM_THREADS"] == "8"


def test_sbatch_with_srun_torchrun() -> None:
    specs = {s.launcher: s for s in parsed("docs/sbatch_torchrun.sh", "launch_spec")}
    assert set(specs) == {"sbatch", "srun", "torchrun"}
    assert specs["sbatch"].launches_tasks is True and specs["sbatch"].exclusive is True
    assert specs["sbatch"].gpus_per_node == 8 and specs["sbatch"].procs_per_node == 1
    assert specs["srun"].inner_launcher == "torchrun"
    assert (specs["torchrun"].nodes, specs["torchrun"].procs_per_node) == (2, 8)
    assert specs["torchrun"].rdzv_backend == "c10d" and specs["torchrun"].variables["MASTER_PORT"] == "29500"


def test_kubernetes_pytorchjob_env() -> None:
    (spec,) = parsed("docs/pytorchjob.yaml", "launch_spec")
    assert spec.launcher == "kubernetes" and (spec.nodes, spec.procs_per_node) == (2, 8)
    assert spec.variables["NCCL_SOCKET_IFNAME"] == "eth0"


@pytest.mark.parametrize(("text", "launcher", "want"), [
    ("python -m torch.distributed.launch --nproc_per_node=2 --use_env main.py", "torch.distributed.launch",
     {"procs_per_node": 2, "script": "main.py"}),
    ("python3 -m torch.distributed.run --nnodes=1:4 --nproc-per-node=gpu train.py", "torchrun",
     {"nodes": 4, "procs_per_node": None}),
    ("deepspeed --num_gpus 4 --num_nodes 2 train.py --deepspeed ds.json", "deepspeed",
     {"procs_per_node": 4, "nodes": 2, "script": "train.py"}),
    ("accelerate launch --num_processes 8 --num_machines 2 --multi_gpu --main_process_port 29501 train.py",
     "accelerate", {"world_size": 8, "nodes": 2, "master_port": 29501, "script": "train.py"}),
    ("composer -n 8 --world_size 16 --master_port 29500 train.py cfg.yaml", "composer",
     {"procs_per_node": 8, "world_size": 16, "master_port": 29500, "script": "train.py"}),
    ("mpirun -np 16 -npernode 8 python train.py", "mpirun", {"world_size": 16, "procs_per_node": 8}),
    ("mpirun -np 8 --map-by ppr:4:node python train.py", "mpirun", {"world_size": 8, "procs_per_node": 4}),
    ("mpirun -np 16 -H node1:8,node2:8 python train.py", "mpirun", {"world_size": 16, "hosts": "node1:8,node2:8"}),
    ("mpiexec -n 16 --hostfile hosts.txt python train.py", "mpirun", {"world_size": 16, "hosts": "hosts.txt"}),
    ("python ./multiproc.py --nnodes 2 --nproc_per_node 8 ./main.py --arch resnet50", "torch.distributed.launch",
     {"nodes": 2, "procs_per_node": 8, "script": "./main.py"}),
    ("torchrun --nnodes 2 --node_rank $SLURM_NODEID --nproc_per_node 4 train.py", "torchrun",
     {"nodes": 2, "node_rank": "$SLURM_NODEID", "procs_per_node": 4}),
    ("python -m lightning run model --devices 4 --num-nodes 2 train.py", "lightning",
     {"procs_per_node": 4, "nodes": 2, "script": "train.py"}),
    ("srun -N2 --ntasks-per-node=4 --gpus-per-task=1 -c 8 --mem=64G python train.py", "srun",
     {"nodes": 2, "procs_per_node": 4, "gpus_per_task": 1, "cpus_per_task": 8, "mem": "64G"}),
    ("nohup numactl --interleave=all torchrun --standalone --nproc_per_node 8 train.py > out.log", "torchrun",
     {"procs_per_node": 8, "script": "train.py"}),
    ("user@node-1:~/proj$ CUDA_VISIBLE_DEVICES=0,1,2 torchrun --nproc-per-node 4 train.py", "torchrun",
     {"procs_per_node": 4, "visible_gpus": 3, "cuda_visible_devices": "0,1,2"}),
    # the script's own DataLoader worker options (torchvision references: -j/--workers; DeiT: --num_workers;
    # Hydra overrides): per process, so the node runs workers x procs_per_node of them
    ("torchrun --nproc_per_node 8 main.py --num_workers 32 --batch-size 128", "torchrun",
     {"procs_per_node": 8, "loader_workers": 32}),
    ("torchrun --nproc-per-node=4 train.py --data-path /data -j 6 --model resnet50", "torchrun",
     {"loader_workers": 6}),
    ("torchrun --standalone --nproc_per_node 2 run.py experiment=unet datamodule.num_workers=0", "torchrun",
     {"loader_workers": 0}),
    ("torchrun --nproc_per_node 2 train.py --epochs 3", "torchrun", {"loader_workers": None}),
    # the GPUs the script's own options name, and the processes torchrun starts when not told (its default, 1)
    ("torchrun train.py --config c.yaml --train --gpu 0,1,2,3,4,5,6,7", "torchrun",
     {"script_gpus": 8, "procs_per_node": None, "procs_default": 1}),
    ("python -m torch.distributed.launch main.py --gpus 4", "torch.distributed.launch",
     {"script_gpus": 4, "procs_default": 1}),
    ("torchrun --nproc_per_node=auto train.py --gpu_ids 0", "torchrun", {"script_gpus": 1, "procs_default": None}),
    ("torchrun --nproc_per_node 2 train.py --gpus -1", "torchrun", {"script_gpus": None, "procs_per_node": 2}),
    ("deepspeed train.py --num_gpus 2", "deepspeed", {"script_gpus": 2, "procs_default": None}),
    # a local rank typed for the script on top of the launcher's own (stanford-futuredata/ColBERT#7), and a
    # command pasted as inline code over several lines, with python3.7
    ("`CUDA_VISIBLE_DEVICES=0,1 python3.7 -m torch.distributed.launch \\\n  --nproc_per_node=${WORLD_SIZE} "
     "colbert/train.py \\\n  --local_rank 2 \\\n  --accum 1`", "torch.distributed.launch",
     {"script_local_rank": 2, "visible_gpus": 2, "script": "colbert/train.py"}),
    ("torchrun --nproc_per_node 2 train.py --epochs 3", "torchrun", {"script_local_rank": None}),
    ("srun python train.py --local_rank 0", "srun", {"script_local_rank": None}),
])
def test_command_lines(text: str, launcher: str, want: dict) -> None:
    spec = _one(text, launcher)
    for key, value in want.items():
        assert getattr(spec, key) == value, (key, spec)


def test_exported_devices_apply_to_later_launch() -> None:
    text = "export CUDA_VISIBLE_DEVICES=0\nexport NCCL_P2P_DISABLE=1\ntorchrun --nproc-per-node 2 train.py\n"
    spec = _one(text, "torchrun")
    assert spec.visible_gpus == 1 and spec.variables["NCCL_P2P_DISABLE"] == "1" and spec.provenance.line == 3


def test_commands_joined_on_one_shell_line() -> None:
    """huggingface/datasets#1942's one-liner: exports, a cleanup and the launch joined by ';' on one line; each
    command is read on its own, and a ';' inside quotes joins nothing."""
    text = ("export BS=16; rm -r output_dir; PYTHONPATH=src USE_TF=0 CUDA_VISIBLE_DEVICES=0,1 python -m "
            "torch.distributed.launch --nproc_per_node=2 examples/seq2seq/run_seq2seq.py --do_eval\n")
    spec = _one(text, "torch.distributed.launch")
    assert (spec.procs_per_node, spec.visible_gpus, spec.script) == (2, 2, "examples/seq2seq/run_seq2seq.py")
    assert _one("cd /work/run && torchrun --nproc_per_node 4 train.py || echo failed\n", "torchrun").procs_per_node == 4
    quoted = parse("x.txt", "python -c \"import os; print(os.environ['WORLD_SIZE'])\"\n")[0]
    assert not [e for e in quoted if e.kind == "launch_spec"]


def test_env_dump_alone() -> None:
    text = "HOME=/home/u\nWORLD_SIZE=8\nMASTER_ADDR=node-1\nMASTER_PORT=29500\nOMP_NUM_THREADS=1\nPATH=/usr/bin\n"
    spec = _one(text, "env")
    assert (spec.world_size, spec.master_addr, spec.master_port) == (8, "node-1", 29500)
    assert "HOME" not in spec.variables and spec.variables["OMP_NUM_THREADS"] == "1"


def test_mp_spawn_script() -> None:
    text = ("import torch.multiprocessing as mp\ndef main():\n    dist.init_process_group(backend='nccl')\n"
            "    model = DistributedDataParallel(model)\nmp.spawn(main, nprocs=4)\n")
    spec = _one(text, "mp.spawn")
    assert spec.procs_per_node == 4 and spec.backend == "nccl" and spec.wrapper == "DistributedDataParallel"


def test_a_sentence_that_starts_with_a_launcher_name_is_no_command() -> None:
    """'deepspeed 去full 微调70b时，...' (a Chinese sentence about a DeepSpeed fine-tune) names no script."""
    specs = parse("x.txt", "deepspeed 去full 微调70b0-hf时，cpu内容超出问题")[0]
    assert not [s for s in specs if s.kind == "launch_spec"]


@pytest.mark.parametrize("text", [
    "torchrun is the launcher we use",          # prose: no options, still a command word
    "Epoch 1: loss=0.3 step=4",
    "the srun of yesterday failed",
])
def test_near_misses_give_no_launch_settings(text: str) -> None:
    specs = [e for e in parse("x.txt", text)[0] if e.kind == "launch_spec"]
    assert all(s.procs_per_node is None and s.nodes is None for s in specs)


def test_content_parser_adapter_reads_a_view() -> None:
    from types import SimpleNamespace

    from diagnose.probes.artifacts.content import ArtifactParser

    view = SimpleNamespace(path="cmd.txt", data=b"torchrun --nproc-per-node 4 train.py\n", rank=None)
    parser = ArtifactParser()
    assert parser.wants(view) and not parser.wants(SimpleNamespace(path="x", data=b"\0\1", rank=None))
    (rec,) = [r for r in parser.parse(view) if r["kind"] != "report_words"]
    assert rec["kind"] == "launch_spec" and rec["procs_per_node"] == 4


def test_pytorchjob_nproc_per_node_and_pod_gpus() -> None:
    """Issue 11 item 1: a PyTorchJob's nprocPerNode and its container's nvidia.com/gpu limit."""
    (spec,) = parsed("docs/pytorchjob_nproc.yaml", "launch_spec")
    assert spec.launcher == "kubernetes" and (spec.procs_per_node, spec.gpus_per_node) == (2, 8)
    (env,) = parsed("docs/pytorchjob.yaml", "launch_spec")  # PET_NPROC_PER_NODE wins over nothing; limit joins
    assert (env.procs_per_node, env.gpus_per_node) == (8, 4)


def test_script_world_size_flag() -> None:
    specs = parse("paste.txt", "$ torchrun --nproc_per_node 2 train.py --world_size 4 --epochs 3")[0]
    assert [(s.launcher, s.world_size) for s in specs if s.kind == "launch_spec"] == [("torchrun", None), ("code", 4)]
    imagenet = parse("p.txt", "torchrun --nproc_per_node 2 main.py --world-size 1 --multiprocessing-distributed")[0]
    assert [s.launcher for s in imagenet if s.kind == "launch_spec"] == ["torchrun"]


def test_processes_started_by_hand() -> None:
    """One plain-python command per process, each told its --rank and the --world_size (the DDP tutorial's
    init_process_group(rank, world_size)): the commands are what was started, the flag is the script's claim."""
    two = "python train.py --rank 0 --world_size 8\nPython train.py --rank 1 --world_size 8\n"
    specs = [(s.launcher, s.world_size) for s in parse("command.txt", two)[0] if s.kind == "launch_spec"]
    assert specs == [("by_hand", 2), ("code", 8)]
    one = "python train.py --rank 0 --world_size 8\n"  # one of several terminals: nothing says how many started
    assert not [s for s in parse("command.txt", one)[0] if s.kind == "launch_spec"]
    same = "python train.py --rank 0 --world-size 2\npython train.py --rank 0 --world-size 2\n"  # a rerun, not two
    assert not [s for s in parse("command.txt", same)[0] if s.kind == "launch_spec"]
    nodes = ("python main.py --dist-url tcp://10.0.0.1:23456 --multiprocessing-distributed --world-size 4 --rank 0\n"
             "python main.py --dist-url tcp://10.0.0.1:23456 --multiprocessing-distributed --world-size 4 --rank 1\n")
    assert not [s for s in parse("command.txt", nodes)[0] if s.kind == "launch_spec"]  # nodes, each spawning its own


def test_openmmlab_dist_train() -> None:
    """OpenMMLab's ``tools/dist_train.sh CONFIG GPUS``, as its docs run it (mmdetection user guide "Train with
    multiple GPUs"; mmpose and mmpretrain alike): GPUs per node, nodes from NNODES, the {N}xb{B} layout the config
    is named after, the batch per GPU from --cfg-options and --auto-scale-lr."""
    cmd = ("NNODES=2 NODE_RANK=0 PORT=29500 MASTER_ADDR=10.1.1.1 bash ./tools/dist_train.sh "
           "configs/resnet/resnet50_8xb32_in1k.py 4 --cfg-options train_dataloader.batch_size=16 --auto-scale-lr")
    spec = _one(cmd, "openmmlab")
    assert (spec.nodes, spec.procs_per_node, spec.processes) == (2, 4, 8)
    assert (spec.design_world, spec.design_batch, spec.local_batch, spec.auto_scale_lr) == (8, 32, 16, True)
    plain = _one("./tools/dist_train.sh configs/faster_rcnn/faster-rcnn_r50_fpn_1x_coco.py 8", "openmmlab")
    assert (plain.procs_per_node, plain.design_world, plain.design_batch) == (8, None, None)
