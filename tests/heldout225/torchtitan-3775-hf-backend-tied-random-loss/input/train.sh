# HF backend: step-1 loss ~11 (random), or the FSDP tied-param crash
HF_HUB_OFFLINE=1 MODULE=transformers_modeling_backend \
  CONFIG=transformers_modeling_backend_full NGPU=2 ./run_train.sh \
  --training.steps 5 --debug.seed 42 --debug.deterministic
