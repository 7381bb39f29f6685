"""Train on the device: TD3 on the board itself (device/lib/nm_td3.py), driven from the host.

    upload_trainer(port)            device/lib (.mpy) + natmods onto the board (deploy's functions)
    TrainClient(port)               NMB/1 session with the trainer's server (nm_td3_server.serve)
    train_on_device(port, ...)      the whole `neuromotor train-on-device`
    write_run_dir(...)              a normal run directory (config, checkpoint, metrics, policy)
"""

from neuromotor.boards.ondevice.client import BoardResetError, TrainClient, upload_trainer
from neuromotor.boards.ondevice.rundir import PROFILES, algo_config, write_run_dir
from neuromotor.boards.ondevice.train import train_on_device

__all__ = ["BoardResetError", "TrainClient", "upload_trainer", "PROFILES", "algo_config", "write_run_dir",
           "train_on_device"]
