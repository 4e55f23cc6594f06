#!/bin/bash
#SBATCH -J sgrn
#SBATCH -o sgrn-%j.log
#SABTCH -e sgrn-%j.err
#SBATCH -N 2
#SBATCH -n 8 
#SBATCH -p GPU-V100 
#SBATCH --gres=gpu:v100:2
echo This job runs on the following nodes:
echo $SLURM_JOB_NODELIST
echo loaded module: ################################
module list
cd HTD
GPUS=4 ./tools/slurm_train.sh GPU-V100 sgrn configs/htd/htd_resnet50_1x.py
