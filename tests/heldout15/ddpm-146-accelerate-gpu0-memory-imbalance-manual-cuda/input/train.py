model = Unet(dim=64, dim_mults=(1, 2, 4, 8), channels=6, num_classes=num_classes).cuda()

diffusion = GaussianDiffusion(
    model,
    image_size=360,
    timesteps=1000,  # number of steps
    sampling_timesteps=32,  # number of sampling timesteps (using ddim for faster inference [see citation for ddim paper])
    loss_type='l1',  # L1 or L2
    # p2_loss_weight_gamma=1.,
    objective='pred_x0',
).cuda()
