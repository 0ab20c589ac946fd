#!/bin/bash
# A batch script, as sbatch takes one: `vipu submit examples/hello.sh`; flags given to vipu submit win over these.
#SBATCH --job-name=hello
#SBATCH --ipus=4
#SBATCH --time=5
#SBATCH --output=hello-%j.out

echo "job $SLURM_JOB_ID ($SLURM_JOB_NAME) holds partition $IPUOF_VIPU_API_PARTITION_ID of $VIPU_PARTITION_IPUS IPUs"
echo "in $(pwd), submitted from $SLURM_SUBMIT_DIR"
