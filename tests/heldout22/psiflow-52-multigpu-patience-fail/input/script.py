        model = MACE(
            r_max=6.5,
            max_L=2,
            num_channels=16,
            energy_weight=200,
            batch_size=16,
            lr=0.005,
            num_radial_basis=10,
            patience=10,
            max_num_epochs=200, # needed for multi-gpu training to replace max_training_time
        )
