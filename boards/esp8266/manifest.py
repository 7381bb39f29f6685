# neuromotor custom firmware: the stock ESP8266 modules plus neuromotor's device runtime.
include("$(PORT_DIR)/boards/manifest.py")
freeze("$(BOARD_DIR)/../../device/lib")
