CUDA_VISIBLE_DEVICES=0,1,2,3 python -m torch.distributed.launch --nproc_per_node=4 --use_env  --master_port 12345 \
    main.py --local_rank 0 \
    --data-path <path> \
    --cfg configs/swin_tiny_patch4_window7_224.yaml
