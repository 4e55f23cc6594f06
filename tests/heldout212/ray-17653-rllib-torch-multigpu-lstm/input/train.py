import ray
import ray.rllib.agents.ppo as ppo]

ray.init()

config={
'framework': 'torch',
'num_gpus': 2, 
'model': {'use_lstm': True}, 
}

trainer = ppo.PPOTrainer(config=config, env="CartPole-v0")
for i in range(10):
   trainer.train() 
