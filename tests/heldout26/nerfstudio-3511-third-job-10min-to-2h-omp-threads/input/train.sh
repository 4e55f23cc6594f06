ns-train nerfacto \
        --vis wandb \
        --experiment-name ""  \
        --max-num-iterations 30000 \
        --pipeline.model.camera-optimizer.mode off \
        nerfstudio-data --data 
