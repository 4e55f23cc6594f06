CUDA_VISIBLE_DEVICES=0,1 tools/dist_train.sh configs/skeleton/posec3d/slowonly_r50_u48_240e_ntu120_xsub_keypoint.py 2
