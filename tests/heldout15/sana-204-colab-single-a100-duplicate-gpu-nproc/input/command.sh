! bash train_scripts/train.sh \
  configs/sana1-5_config/1024ms/Sana_1600M_1024px_AdamW_fsdp.yaml \
  --data.data_dir="[asset/1024]" \
  --data.type=SanaImgDataset \
  --model.load_from=hf://Efficient-Large-Model/SANA1.5_1.6B_1024px/checkpoints/Sana1-5_1600M_1024px.pth \
  --model.multi_scale=false \
  --train.train_batch_size=8
