multi node + qwen3.5 + megatron + sft 似乎存在内存泄露情况.

export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
export SKIP_MULTIMODAL_MTP_VALIDATION=1
# 训练参数
export NPROC_PER_NODE=8
export CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
export SWIFT_USE_MCORE_GDN=1 
export OMP_NUM_THREADS=1
nohup megatron pt \
    --model /workspace/model_hub/Qwen3.5-9B/ \
    --save_safetensors true \
    --use_chat_template false \
    --dataset '/workspace/mllm_cpt_data/mllm_cpt_data_.jsonl' \
    --load_from_cache_file true \
    --split_dataset_ratio 0 \
    --tuner_type full \
    --loss_scale all \
    --tensor_model_parallel_size 8 \
    --pipeline_model_parallel_size 1 \
    --micro_batch_size 2 \
    --global_batch_size 128\
    --num_train_epochs 1 \
    --finetune true \
    --packing true \
    --freeze_llm false \
    --freeze_vit false \
    --freeze_aligner false \
    --cross_entropy_loss_fusion true \
    --enable_channel_loss true \
    --lr 5e-5 \
    --lr_warmup_fraction 0.05 \
    --min_lr 1e-6 \
    --output_dir megatron_output/Qwen3.5-9B-mllm-cpt \
    --eval_steps 200 \
    --save_steps 200 \
    --max_length 32768 \
    --dataloader_num_workers 128 \
    --dataset_num_proc 128 \
    --no_save_optim true \
    --no_save_rng true \
    --dataloader_persistent_workers false \
    --sequence_parallel true \
    --attention_backend flash
