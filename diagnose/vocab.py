"""Symptom and cause ids: a mirror of shared/corpus/CAUSES.md (the labelling contract)."""

from __future__ import annotations

SYMPTOMS: dict[str, str] = {
    'hang_at_startup': 'job never gets past process-group init / rendezvous / first collective',
    'hang_mid_run': 'job ran, then stopped making progress (watchdog timeout, stuck collective, stuck at epoch end or checkpoint)',
    'crash': 'a rank died with an exception or signal; other ranks may then time out',
    'oom': 'out of memory (device or host), including OOM that appears only after scaling',
    'slow_scaling': 'more devices do not give the expected speed-up; low scaling efficiency',
    'slow_step': 'single-device or per-rank step is slow (GPU waits for data, syncs, small batch)',
    'divergence': 'loss/accuracy differs after scaling or between single- and multi-GPU',
    'resume_mismatch': 'training behaves differently after checkpoint resume, or resume fails',
}

# cause id -> (family, meaning)
CAUSES: dict[str, tuple[str, str]] = {
    'launcher_misconfig': ('startup', 'wrong launcher use: nproc/nnodes wrong, script not launched via torchrun/srun, missing LOCAL_RANK handling, processes per GPU != 1'),
    'rank_env_mismatch': ('startup', 'RANK/WORLD_SIZE/LOCAL_RANK/CUDA_VISIBLE_DEVICES inconsistent across ranks; two ranks on one GPU; ranks disagree on per-rank config such as output paths'),
    'rendezvous_misconfig': ('startup', 'MASTER_ADDR/MASTER_PORT/rdzv endpoint wrong or unreachable, port in use, rendezvous timeout, world size never reached'),
    'filesystem': ('startup / io', 'shared filesystem problem: rendezvous file, slow or unavailable storage, checkpoint path not shared'),
    'nccl_setup': ('startup / comm', 'NCCL transport misconfigured: wrong NCCL_SOCKET_IFNAME, IB/RDMA unavailable, P2P/SHM problems, version mismatch, unhandled system error'),
    'rank_failure': ('hang / crash', 'one rank died (exception, OOM, signal, node loss) and the others wait forever or time out'),
    'network_timeout': ('hang', 'a collective exceeded its timeout for network reasons (flaky link, congestion), not a program bug'),
    'collective_mismatch': ('hang', 'ranks issue different collectives, in different order, or with different shapes/dtypes (desync), incl. a rank skipping a collective under a condition'),
    'checkpoint_barrier': ('hang', 'rank 0 (or a subset) does slow checkpoint/eval/logging work while the others wait at a barrier or collective past the timeout'),
    'uneven_dataloader': ('hang', 'ranks get a different number of batches (no DistributedSampler, drop_last, uneven shards) and hang at epoch end'),
    'communication_bound': ('perf', 'all-reduce / communication dominates step time; interconnect bandwidth caps scaling'),
    'input_pipeline_bound': ('perf', 'GPU waits for data: dataloader workers, storage path, shard format, cache'),
    'sync_logging': ('perf', 'host-device syncs every step (.item(), print, metrics all-reduce) stall the pipeline'),
    'small_batch': ('perf', 'per-rank batch too small to amortize communication or kernel launch'),
    'scheduler_layout': ('perf', 'bad placement: ranks spread across nodes/sockets, wrong GPUs per node, CPU binding'),
    'effective_batch_change': ('divergence', 'B_eff = N * B_local * A changed but LR, warmup, schedule, clipping were not adjusted'),
    'sampler_misconfig': ('divergence', 'no DistributedSampler, missing set_epoch, same seed on every rank, data duplicated or skipped'),
    'batchnorm_sync': ('divergence', 'BatchNorm statistics per-rank instead of synchronized (SyncBatchNorm missing) or small per-rank batch for BN'),
    'nondeterminism': ('divergence', 'non-deterministic kernels, unseeded RNG, or data order makes runs differ'),
    'gradient_sync_error': ('divergence / crash', 'gradients not synchronized as intended: no_sync misuse, unused parameters, find_unused_parameters, accumulation counted differently across ranks'),
    'per_rank_batch_too_large': ('oom', 'per-rank batch (or sequence length) too large for device memory'),
    'gradient_buckets_memory': ('oom', 'DDP gradient buckets / communication buffers add memory only in the distributed run'),
    'sharding_misconfig': ('oom / resume', 'FSDP/ZeRO sharding wrong or missing, full state materialized on one rank, wrong sharding on load'),
    'validation_batch_memory': ('oom', 'validation/eval batch or no_grad missing makes eval OOM'),
    'activation_memory': ('oom', 'activations dominate; no activation checkpointing / mixed precision'),
    'host_memory': ('oom', 'host (CPU) RAM exhausted: dataloader workers, pinned memory, checkpoint load on every rank'),
    'checkpoint_missing_state': ('resume', 'checkpoint lacks optimizer, scheduler, scaler, RNG, sampler, global step, or sharding metadata'),
    'hardware_fault': ('crash / hang', 'faulty GPU, ECC/Xid error, NVLink down, node failure'),
    'version_mismatch': ('startup / crash', 'different torch/NCCL/CUDA versions across ranks or driver too old'),
    'host_config': ('startup / crash', 'host or container setup: /dev/shm too small or not writable, memlock limit for RDMA, fabric manager not running, PCIe ACS / IOMMU settings, driver services'),
    'cpu_oversubscription': ('perf', 'too many CPU threads per process (OMP/MKL/OpenCV threads x ranks x dataloader workers) for the cores available'),
    'resource_request': ('crash / oom', "the scheduler's limits (Slurm --mem, --time, cgroup, GPU count) kill or throttle the job although the node has room"),
    'state_dict_mismatch': ('resume', 'checkpoint keys or shapes do not match the model: `module.` prefix from DDP, FSDP/compiled wrappers, sharded vs full state dict'),
    'stale_processes': ('startup / oom', 'leftovers of an earlier run hold GPU memory, ports or files: the job state was not reconciled before relaunch'),
    'framework_bug': ('any', 'a bug or regression in PyTorch, NCCL, DeepSpeed or another framework, fixed by another version'),
}

# finer cause ids a rule may name: id -> (the CAUSES id it refines, meaning)
REFINEMENTS: dict[str, tuple[str, str]] = {
    'user_code_error': ('rank_failure', "an exception raised in the user's own code (KeyError, ZeroDivisionError, "
                        'ImportError, AssertionError, a missing data file, ...) ended a process'),
    'native_crash': ('rank_failure', 'a process died in native code: segmentation fault, Fatal Python error, SIGSEGV'),
}

# plain words a user may pass to --symptom
SYMPTOM_WORDS: dict[str, tuple[str, ...]] = {
    "hang": ("hang_at_startup", "hang_mid_run"),
    "slow": ("slow_step", "slow_scaling"),
    "oom": ("oom",),
    "crash": ("crash",),
    "diverged": ("divergence",),
    "divergence": ("divergence",),
    "resume": ("resume_mismatch",),
}


def resolve_symptom(word: str) -> tuple[str, ...]:
    """Symptom ids for a `--symptom` value (an id or a plain word); empty when unknown."""
    key = word.strip().lower().replace("-", "_")
    if key in SYMPTOMS:
        return (key,)
    return SYMPTOM_WORDS.get(key, ())
