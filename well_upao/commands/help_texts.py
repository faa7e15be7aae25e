"""The long descriptions of the ``well-upao`` commands' ``--help`` (text only; ``commands/parsers.py`` builds the
parsers around them)."""

GENERATE_EXACT = """\
    Evaluate one of the paper's exact-solution PDE families on a periodic grid x_i = i L / N and
    write it where The Well's loaders (and `python -m the_well.benchmark.train data=<pde>`) find it:

      OUT/<pde>/data/{train,valid,test}/*.hdf5   and   OUT/<pde>/stats.yaml

    Trajectories are split 90% train / 10% valid by a permutation seeded with --seed (the paper's
    protocol). test/ holds the valid trajectories again (the paper evaluates on its validation split)
    unless --test-fraction carves out a separate held-out test set. stats.yaml uses train/ only.
    Defaults are the paper's table:
    """
GENERATE_REPLICA = """\
    Simulate one of The Well's datasets from its documented equations, parameters, domain and frame
    spacing, and write it as the Well does: OUT/<dataset>/data/{train,valid,test}/<the Well's file name
    per parameter set>.hdf5 and stats.yaml, with a root attribute `well_upao_replica` saying how it was
    made. Defaults are CPU sizes on a resolved subset of the parameters; --full gives the Well's sets
    and sizes (hours to days on a CPU).

    """
REPLICA_EXAMPLES = (
    "\n\nexamples:\n  well-upao generate-replica --dataset gray_scott_reaction_diffusion\n"
    "  well-upao generate-replica --dataset shear_flow --resolution 128 256 --n-traj 4\n"
    "  well-upao generate-replica --dataset active_matter --sets 0 --n-traj 3 --n-steps 41"
    "   # ~3 CPU-minutes a trajectory"
)
EVALUATE = """\
    Compare checkpoints (or run folders) with the classical baselines on a dataset split: persistence,
    linear and quadratic extrapolation of the history, and one step of a numerical solver of the PDE
    (where one exists). One-step errors use every frame's true history (the paper's protocol); rollouts
    feed each prediction back, from up to --rollout-starts windows of each trajectory, and are reported
    as the Well's benchmark tables report them: the mean VRMSE over the predicted steps 6:12 and 13:30
    (counted from 0), "not held" where the trajectories are too short. Prints a markdown table, writes
    JSON and PNG figures (truth / prediction / error / PDE residual; error vs rollout step with the
    windows marked) to --out (--no-figures: the JSON alone).

    A run folder (or checkpoint) knows its dataset, base path, stride and history, and the modules its
    data.imports named: flags override them.

    examples:
      well-upao evaluate --data wave2d
      well-upao evaluate experiments/wave2d-na_nslora-upao-NATransformer-0.0001/0
      well-upao evaluate experiments/wave2d-na_nslora-upao-NATransformer-0.0001/0 --stride 10
      well-upao evaluate "UPAO, norm=runs/a/0" "UPAO, no_norm=runs/b/0"   (LABEL=PATH names a row)
      well-upao evaluate upao=runs/a/0 --match-solver upao   (solver rows at upao's cost and accuracy)
      well-upao evaluate --data wave2d --zero-shot-from "from burgers2d=runs/bg/0"   (cross-dataset)
    """
FORECAST = """\
    Predict the future of each trajectory of --input from its history alone, without labels. The
    candidates: the model of SOURCE (a run folder, a checkpoint, a shipped backbone: shipped,
    shipped_extrap2; or `classical` for none), persistence, extrap1, extrap2 and, where the input's PDE
    is registered and supported, a solver step. Each candidate is backtested on the histories; per
    window (step 1; steps 2-12 read with the Well's 6:12; 13 on with 13:30) the candidate with the lowest
    backtest error is used, and its expected VRMSE is stated with a nominal 80% interval.

    Writes OUT/forecast.hdf5 (the Well's layout, time continuing the input's), OUT/forecast.json (per
    window: predictor, expected VRMSE and interval, evidence) and two figures.

    examples:
      well-upao forecast experiments/wave2d-na_nslora-upao-NATransformer-0.0001/0 --input hist.hdf5 --steps 30
      well-upao forecast classical --input datasets/wave2d --split valid --history 8 --steps 12
      well-upao forecast RUN --input datasets/wave2d --start 20 --steps 12   (forecast from frame 20, to check)
    """
RESIDUAL_FLOOR = """\
    For each stride, derivative (fd; fd4 and spectral on periodic axes) and time scheme (explicit,
    implicit, crank_nicolson, central), the relative residual ||R_k|| / ||scale_k|| of every sub-equation
    over the interior, computed from the observed frames of a split only (what a UPAO run may read). UPAO
    cannot push a prediction closer to the truth than this floor; the lowest combination is marked (it is
    what trainer.derivative=auto and trainer.time_scheme=auto choose).

    examples:
      well-upao residual-floor --data wave2d --stride 1 5
      well-upao residual-floor --data gray_scott_reaction_diffusion --json floor.json
    """
IMPORT = """\
    Write your arrays as a dataset in The Well's layout, where its loaders, our commands and
    `python -m the_well.benchmark.train data.well_dataset_name=NAME` find it:

      OUT/NAME/data/{train,valid,test}/*.hdf5   and   OUT/NAME/stats.yaml (train/ only, as the Well's
      statistics script computes it)

    SOURCE is an .npz archive (members saved with np.savez are memory-mapped), a netCDF file or a zarr
    folder (read lazily with xarray: the io extra). Every axis is named: trajectory, time, x, y, z and the
    component axes i, j; frames are written as (trajectory, time, x, y, z, components) whatever the stored
    order. Vector components point along x, y, z in that order. A periodic axis stored with its endpoint
    twice loses the duplicate (said so). Trajectories are split 80/10/10 by a permutation seeded with
    --seed; --segments cuts long trajectories in time and splits them in time. Bad input (ragged
    trajectories, uneven time, NaN, disagreeing shapes, an empty split) is refused with the fix, and
    nothing is written. Prints what was read, changed and written, then the next step.

    examples:
      well-upao import heat.npz --dataset my_heat --dims trajectory time x --spacing x=0.098 --dt 0.05 \\
          --scalar kappa --slots T=temperature
      well-upao import run.nc --dataset ocean --dim-names lat=y lon=x run=trajectory --boundary x=periodic y=wall \\
          --vector velocity=u,v --time-unit h
      well-upao import long_run.npz --dataset long --dims time x y --spacing x=0.1 y=0.1 --dt 0.01 --segments 10
    """
