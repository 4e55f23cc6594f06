import json, time
from diagnose.live import run_hang
def test_dbg(slurm_submit, slurm_cluster, tmp_path):
    job = slurm_submit("hang_srun.sbatch", tmp_path / "m", nranks=1, scenario="dead_traceback")
    print(slurm_cluster.run("scontrol", "listpids", job.id))
    t=time.time(); r = run_hang(f"slurm:{job.id}").to_json_dict(); print("took", time.time()-t)
    print(json.dumps({k: r[k] for k in ("causes", "notes", "ranks", "skipped", "rank_states")}, indent=1)[:5000])
    t=time.time(); slurm_cluster.cancel(job.id); print("cancel took", time.time()-t, slurm_cluster.state(job.id))
    print(open(job.output).read())
