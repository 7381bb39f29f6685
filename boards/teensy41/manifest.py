# neuromotor custom firmware: the stock Teensy 4.1 modules plus neuromotor's device runtime.
include("$(PORT_DIR)/boards/TEENSY41/manifest.py")
freeze("$(BOARD_DIR)/../../device/lib")
