#!/bin/bash
#SBATCH --job-name=dpkit
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=2
#SBATCH --cpus-per-task=1
#SBATCH --time=00:10:00
#SBATCH --output=runs/slurm-08/slurm.out

srun /work/main/.venv/bin/python -m dpkit task --slurm --port-base=45231 --logdir=runs/slurm-08/run --train_steps=100 --checkpoint_every=100
