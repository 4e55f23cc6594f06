./tools/train_net.py --config-file configs/COCO-Detection/retinanet_R_50_FPN_3x.y
aml --num-gpu 2 --num-machines 2 --machine-rank 0 --dist-url "tcp://XXX.XXX.XXX.XXX:XXX" 

./tools/train_net.py --config-file configs/COCO-Detection/retinanet_R_50_FPN_3x.y
aml --resume --num-gpu 2 --num-machines 2 --machine-rank 0 --dist-url "tcp://XXX.XXX.XXX.XXX:XXX" 
