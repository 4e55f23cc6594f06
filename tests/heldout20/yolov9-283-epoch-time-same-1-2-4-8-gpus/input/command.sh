python -m torch.distributed.launch --nproc_per_node 8 \
                                   --use_env \
                                   train_dual.py \
                                   --workers 8 \
                                   --device '0,1,2,3,4,5,6,7' \
                                   --sync-bn \
                                   --batch 128 \
                                   --data data/biaoji.yaml \
                                   --img 640 \
                                   --cfg models/detect/yolov9-c-bj.yaml \
                                   --weights './pretrained/yolov9-c.pt' \
                                   --name yolov9-c-bj \
                                   --hyp hyp.scratch-high.yaml \
                                   --min-items 0 \
                                   --epochs 500 \
                                   --close-mosaic 15
