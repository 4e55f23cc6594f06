docker run --shm-size=950g ..
python -m yolox.tools.train -f exps/default/yolox_m.py -d 8 -b 64 -o --cache --fp16
