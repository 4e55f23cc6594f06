export CUDA_VISIBLE_DEVICES=0,1,2,3
NCCL_DEBUG=INFO CUDA_LAUNCH_BLOCKING=1 torchrun --nproc-per-node 4 trainer.py   # HF distilBERT
# works with --nproc-per-node 2; works with 4 when NCCL_SHM_DISABLE=1 is set
# df /dev/shm: 64M
