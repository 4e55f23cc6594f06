NGPUS=4 \
GPU_ID=0,1,2,3
CUDA_VISIBLE_DEVICES=${GPU_ID} python -m torch.distributed.launch --nproc_per_node=$NGPUS tools/train_net.py \
    --config-file "configs/e2e_faster_rcnn_R_50_C4_1x.yaml"

NGPUS=4 \
GPU_ID=4,5,6,7
CUDA_VISIBLE_DEVICES=${GPU_ID} python -m torch.distributed.launch --nproc_per_node=$NGPUS tools/train_net.py \
    --config-file "configs/e2e_faster_rcnn_R_50_C4_1x.yaml"
