"""neuromotor: reinforcement learning for microcontrollers, from Python."""

__version__ = "0.1.0"
