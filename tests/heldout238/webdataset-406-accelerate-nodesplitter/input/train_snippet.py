tar_files = glob.glob(wds_path)
dataset = wds.WebDataset(tar_files, resampled=True).decode("pil").shuffle(1000).to_tuple("jpg", "txt").with_epoch(10000)
train_dataloader= DataLoader(dataset, batch_size=train_batch_size, num_workers=num_workers, collate_fn=collate_fn)
ip_adapter, optimizer, _, lr_scheduler = accelerator.prepare(
        ip_adapter, optimizer, deepcopy(train_dataloader), lr_scheduler
    )

for step, batch in enumerate(train_dataloader, start=step_in_epoch):
