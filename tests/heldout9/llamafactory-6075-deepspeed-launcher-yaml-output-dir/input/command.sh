deepspeed \
    --num_gpus 8 \
    --num_nodes 2 \
    --hostfile hostfile \
    --master_addr 10.252.32.12 src/train.py \
    examples/train_lora/llama3_lora_sft_ds3.yaml
