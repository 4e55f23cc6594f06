sh examples/full_multi_gpu/multi_node.sh
