# launching the same config with torchrun trains fine
# fails:
mpirun -np 4 --allow-run-as-root python /opt/ml/code/mmdetection/tools/train.py /opt/ml/code/mmdetection/configs/yolox/yolox_s_8xb8-300e_coco.py --launcher mpi
# mmdetection v3.0.0rc1
