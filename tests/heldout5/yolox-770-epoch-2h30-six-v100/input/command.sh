python tools/train.py -n yolox-m -d 6 -b 48 --fp16 -o
