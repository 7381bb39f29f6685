# neuromotor custom firmware: the stock pyboard modules plus neuromotor's device runtime.
include("$(PORT_DIR)/boards/PYBV10/manifest.py")
freeze("$(BOARD_DIR)/../../device/lib")
