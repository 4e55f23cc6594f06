python main_train_psnr.py --opt options/swinir/train_swinir_sr_lightweight.json
