#!/bin/bash

export NCCL_DEBUG=INFO
export NCCL_DEBUG_SUBSYS=INIT,COLL

GPUS_PER_NODE=4
# Change for multinode config
#MASTER_ADDR=localhost
MASTER_ADDR="task272117"
MASTER_PORT=88
NNODES=2
NODE_RANK=0
WORLD_SIZE=$(($GPUS_PER_NODE*$NNODES))

#DATA_PATH=../../../make_pretrain_data/build_baseline_data/train/
# DATA_PATH="../../../make_pretrain_data/build_baseline_data_wsop_filter/train/"
DATA_PATH="/root/ouyangxuan/project/pretrain_tmp/pretrain_data/train"
CHECKPOINT_PATH=outputs_tmp

if [ ! -d ${CHECKPOINT_PATH}  ];then
  mkdir ${CHECKPOINT_PATH}
else
  echo "dir exist, not mkdir"
fi

# DATA_PATH=<Specify path and file prefix>_text_sentence
# CHECKPOINT_PATH=<Specify path>

DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES --node_rank $NODE_RANK --master_addr $MASTER_ADDR --master_port $MASTER_PORT"

python -m torch.distributed.launch $DISTRIBUTED_ARGS \
       pretrain_bert.py \
       --num-layers 24 \
       --hidden-size 1024 \
       --num-attention-heads 16 \
       --micro-batch-size 1 \
       --global-batch-size 8 \
       --seq-length 512 \
       --max-position-embeddings 512 \
       --train-iters 1000000 \
       --save $CHECKPOINT_PATH \
       --load $CHECKPOINT_PATH \
