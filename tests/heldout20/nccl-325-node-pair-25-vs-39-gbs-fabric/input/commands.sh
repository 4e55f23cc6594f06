`NCCL_DEBUG_SUBSYS=GRAPH,INIT,NET NCCL_DEBUG=INFO NCCL_ALGO=RING mpiexec -f /tmp/rcall-mpi-hosts-2 /root/nccl-tests/build/all_reduce_perf -b 1M -e 2048M -f 2 -g 1 -c 0 -d half > first-pair.txt`
`NCCL_DEBUG_SUBSYS=GRAPH,INIT,NET NCCL_DEBUG=INFO NCCL_ALGO=RING mpiexec -f /tmp/rcall-mpi-hosts-3 /root/nccl-tests/build/all_reduce_perf -b 1M -e 2048M -f 2 -g 1 -c 0 -d half > second-pair.txt`
