export CUDA_VISIBLE_DEVICES=4,5,6,7
tools/dist_train.sh configs/test.py 4
