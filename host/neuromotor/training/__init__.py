"""The training stack: a run from its settings to its directory.

    config       every setting checked (type, range, finite) before anything is made
    session      a run configured, resumed and trained: the path `train` and `sweep` share
    loop         the training loop every algorithm shares (evaluation, metrics, checkpoints)
    runs         run directories: what a run leaves behind, and its policy back out
    checkpoint   the atomic .npz of a run's whole state
    memory       how much memory a run will take, checked before allocating
    parallel     a population cut into shards in worker processes
    evaluation   deterministic evaluation episodes
    sweep, sweep_ray   hyperparameter sweeps on local processes or Ray
    tensorboard, plotting   what a run shows: event files and the learning curve
"""
