model = DDP(model, ...)
...

# Training
encoder_out = model.module.forward_encoder()
decoder_out = model.module.forward_decoder()
loss = loss_fn(decoder_out, targets)
loss.backwar()
...
