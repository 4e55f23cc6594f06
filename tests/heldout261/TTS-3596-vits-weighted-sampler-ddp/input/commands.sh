# 1 GPU -> no error
CUDA_VISIBLE_DEVICES="0" python -m trainer.distribute --script recipes/vctk/vits/train_vits.py

# multi GPU -> error
CUDA_VISIBLE_DEVICES="0, 1" python -m trainer.distribute --script recipes/vctk/vits/train_vits.py
