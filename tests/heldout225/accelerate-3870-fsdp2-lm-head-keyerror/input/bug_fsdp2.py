# bug_fsdp2.py
import torch
from datasets import Dataset
from transformers import Trainer, TrainingArguments, AutoModelForCausalLM

data = torch.randint(0, 100, (100, 10))
dataset = Dataset.from_dict({"input_ids": data, "labels": data})
args = TrainingArguments()
model = AutoModelForCausalLM.from_pretrained("Qwen/Qwen3-1.7B", dtype="auto")
trainer = Trainer(model=model, args=args, train_dataset=dataset)
trainer.train()
