torchrun --nproc_per_node=2 --nnodes=2 --node_rank=0 --master_addr='10.110.158.1' --master_port=3456 main.py  
torchrun --nproc_per_node=2 --nnodes=2 --node_rank=1 --master_addr='10.110.158.1' --master_port=3456 main.py
