# neuromotor custom firmware: the stock NUCLEO_H743ZI modules plus neuromotor's device runtime.
include("$(PORT_DIR)/boards/NUCLEO_H743ZI/manifest.py")
freeze("$(BOARD_DIR)/../../device/lib")
