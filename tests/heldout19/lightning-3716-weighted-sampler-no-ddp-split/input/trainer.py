trainer = pl.Trainer(   gpus                = args.gpus, 
                            num_nodes           = 1,
                            distributed_backend = 'ddp', 
                            max_epochs          = args.epochs,
                            weights_save_path   = args.weights_save_path, 
                            logger              = True,
                            replace_sampler_ddp = False,
                            checkpoint_callback = checkpoint_callback)
