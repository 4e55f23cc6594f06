RUST_BACKTRACE=1 uv run torchft_lighthouse     --min_replicas 2        --quorum_tick_ms 100    --join_timeout_ms 100

TORCHFT_LIGHTHOUSE=http://localhost:29510 torchrun --nproc-per-node 1 minimal_join.py
