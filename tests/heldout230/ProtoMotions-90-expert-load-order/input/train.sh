export LD_LIBRARY_PATH=${CONDA_PREFIX}/lib/
export CUDA_VISIBLE_DEVICES=1,2,3,4

python protomotions/train_agent.py +exp=masked_mimic/flat_terrain +robot=smpl \
+simulator=isaacgym motion_file=amass_data_proto/amass_train.pt agent.config.expert_model_path=data/pretrained_models/motion_tracker/smpl \
+terrain=flat +experiment_name=masked_mimic_amass_wandb_pretrain ngpu=4 eval_overrides.ngpu=4 num_envs=2048 agent.config.batch_size=8192 +opt=wandb
