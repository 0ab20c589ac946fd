#!/bin/bash
#SBATCH -J tiny-pp-program
#SBATCH --ipus 4
#SBATCH -t 5:00
# examples/tiny_pp.py on its job's 4 IPUs: vipu submit examples/tiny_pp.sh (from the repository's folder)
exec python "${SLURM_SUBMIT_DIR}/examples/tiny_pp.py"
