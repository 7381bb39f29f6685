# neuromotor custom firmware: the stock ESP32-S3 modules plus neuromotor's device runtime.
include("$(PORT_DIR)/boards/manifest.py")
freeze("$(BOARD_DIR)/../../device/lib")
