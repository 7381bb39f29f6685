"""The largest values neuromotor accepts, wherever they come from (a config, the command line, a file).

Each is far beyond any real run and small enough that what it sizes cannot overflow."""

MAX_STEPS = 10**15          # env steps, step intervals: far beyond any run, still exact in float64
MAX_COUNT = 2**31 - 1       # sizes that become array dimensions
MAX_LAYER = 65_536          # units in one hidden layer
MAX_LAYERS = 64
MAX_SEED = 2**32 - 1        # seeds feed 32-bit RNG seeding on boards too
MAX_AGENTS = 1_000_000      # a population bigger than this never fits; memory is checked separately
MAX_FINETUNE_STEPS = 100_000  # int8 fine-tuning steps (full-batch: each is a pass over the calibration set)
MAX_START_DRAWS = 64        # initial states drawn per training episode (the hardest is kept)
