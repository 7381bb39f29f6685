# Frozen into the browser build: the device library (trainer, runtime, pendulum).
freeze("../../device/lib")
