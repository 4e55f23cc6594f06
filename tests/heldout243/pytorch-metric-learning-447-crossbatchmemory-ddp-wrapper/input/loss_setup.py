loss_fn = losses.ContrastiveLoss(pos_margin=args.pos_margin, neg_margin=args.neg_margin)
loss_fn = losses.CrossBatchMemory(loss_fn, embedding_size=args.embdding_size, memory_size=args.memory_size)
loss_fn = pml_dist.DistributedLossWrapper(loss=loss_fn, efficient=False)
