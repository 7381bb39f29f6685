"""mpremote-driven deploy of policy + device library + native kernels, atomic per file."""

from neuromotor.boards.deploy.core import (LOCK, MANIFEST, PAUSE_ENV, POLICY_DEST, DeployError,
                                    Deployer, deploy)

__all__ = ["deploy", "Deployer", "DeployError", "LOCK", "MANIFEST", "POLICY_DEST", "PAUSE_ENV"]
