python -m torch.distributed.launch \
--nproc_per_node=3 --nnodes=2 --node_rank=1 \
--master_addr=192.168.5.12 --master_port=1234 \
ddp.py
