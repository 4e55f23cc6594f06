# First two epochs:
train_dalle.py --local_rank=0 --taming --amp --image_text_folder ../dataset --truncate_captions --batch=40 --deepspeed

# Resuming after two epochs:
train_dalle.py --local_rank=0 --taming --amp --image_text_folder ../dataset --dalle_path ./dalle.pt --truncate_captions --batch=40
