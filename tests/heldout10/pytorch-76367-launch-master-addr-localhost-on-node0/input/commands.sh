# on node0
$ python -m torch.distributed.launch --master_addr=localhost <...args...>

# on node1
$ python -m torch.distributed.launch --master_addr="172.16.0.142" <...args...>
