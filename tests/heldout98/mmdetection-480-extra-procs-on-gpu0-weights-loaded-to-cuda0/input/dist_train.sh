#!/usr/bin/env bash
PYTHON=${PYTHON:-"python"}
export NGPUS=4
CUDA_VISIBLE_DEVICES=0,1,2,3 $PYTHON -m torch.distributed.launch --nproc_per_node=$NGPUS --master_port 2400 tools/train.py configs/mask_rcnn_r101_fpn_gn_2x.py --gpus 4
