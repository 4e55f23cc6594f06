# recipes/lora_finetune_single_device.py, train()
for curr_epoch in range(self.epochs_run, self.total_epochs):
    self._sampler.set_epoch(curr_epoch)
    for idx, batch in enumerate(pbar := tqdm(self._dataloader)):
        if (self.max_steps_per_epoch is not None and idx == self.max_steps_per_epoch):
            break
        self.total_training_steps += 1
        self._optimizer.zero_grad()

        input_ids, labels = batch
        input_ids = input_ids.to(self._device)
        labels = labels.to(self._device)

        logits = self._model(input_ids)
        logits = logits[..., :-1, :].contiguous()
        labels = labels[..., 1:].contiguous()
        logits = logits.transpose(1, 2)
        loss = self._loss_fn(logits, labels)

        pbar.set_description(f"{curr_epoch+1}|{idx+1}|Loss: {loss.item()}")

        if self.total_training_steps % self._log_every_n_steps == 0:
            self._metric_logger.log_dict(
                {
                    "loss": loss.item(),
                    "lr": self._optimizer.param_groups[0]["lr"],
                    "gpu_resources": torch.cuda.memory_allocated(),
                },
                step=self.total_training_steps,
            )

        loss.backward()
        self._optimizer.step()
        self._lr_scheduler.step()
