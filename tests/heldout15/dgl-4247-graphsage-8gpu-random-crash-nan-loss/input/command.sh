`yes |  python3 train_sampling_unsupervised.py --dataset ogbn-products --num-epochs 1 --gpu 0,1,2,3,4,5,6,7`
