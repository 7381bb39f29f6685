# Thin entry points. Everything lands in .venv (the CLI is .venv/bin/neuromotor)
# and in the build cache $(NEUROMOTOR_CACHE), never in the source tree.
PYTHON ?= python3
VENV := .venv
NM := $(VENV)/bin/neuromotor
BOARD ?= unix
export NEUROMOTOR_CACHE ?= $(HOME)/.cache/neuromotor

.PHONY: demo test fresh-check venv compare system micropython firmware natmods emulated browser bench clean docs

# Train on the host, export, then on an emulated Cortex-M7: deploy, HIL, bench.
# The trap stops exactly the QEMU this recipe started, whatever fails.
demo: venv system
	$(NM) train pendulum --algo td3 --steps 10000 --seed 0 --run-dir runs/demo --force
	$(NM) export runs/demo -o runs/demo/policy.nmp
	@port=$$($(NM) board start qemu-m7 --instance demo --build) || exit 1; \
	trap '$(NM) board stop demo' EXIT; \
	$(NM) deploy runs/demo/policy.nmp --port $$port && \
	$(NM) hil runs/demo --port $$port --episodes 3 && \
	$(NM) bench --port $$port --out runs/demo/bench

EMULATED_BOARDS := qemu-m4f qemu-m7 qemu-rv32 qemu-xtensa

# Test files run side by side (pytest-xdist), each file on one worker so its boards start once;
# most of the time goes to emulated boards and serial transfers, not to this machine's cores.
TEST_WORKERS ?= 4
test: venv system firmware natmods emulated browser
	$(VENV)/bin/python -m pytest -q -rs -n $(TEST_WORKERS) --dist loadfile

# The README's two commands on a brand-new minimal Debian root (debootstrap), from a
# clone of HEAD: what CI runs (.ci/fresh-check; needs root).
fresh-check:
	.ci/fresh-check HEAD

venv: $(VENV)/.installed

# After `system`: on a minimal Debian, python3's venv module comes from there (and gcc
# with Python's headers, which build the extension neuromotor.native._nm_host from
# device/native: an edit there reinstalls).
$(VENV)/.installed: pyproject.toml setup.py $(wildcard device/native/nm_host/*) $(wildcard device/native/include/*.h) | system
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[dev,device,mujoco,platformio,ray,docs]'
	touch $@

# torch pinned first, so stable-baselines3 does not pull a newer release (the comparisons were
# measured with 2.13.0; on Linux, PyPI's build brings its CUDA libraries, a few GB, used or not).
compare: venv
	$(VENV)/bin/pip install -q torch==2.13.0
	$(VENV)/bin/pip install -q -e '.[dev,device,mujoco,compare]'

system:
	PYTHON=$(PYTHON) device/port/setup_system.sh

micropython:
	device/port/fetch_micropython.sh

firmware: venv system
	$(MAKE) --no-print-directory -C device/port firmware BOARD=$(BOARD)

natmods: venv system
	$(MAKE) -C device/port natmods

# MicroPython's webassembly port with the kernels, for the web page (neuromotor serve-web).
browser: venv system
	$(MAKE) --no-print-directory -C device/port firmware BOARD=browser

# The boards' firmware and the cycle model QEMU runs them with (docs/timing-model.md).
emulated: venv system
	for b in $(EMULATED_BOARDS); do $(MAKE) -C device/port firmware BOARD=$$b || exit 1; done
	$(MAKE) --no-print-directory -C device/timing plugin microbench

bench: venv firmware natmods emulated
	$(VENV)/bin/python benchmarks/td3_pendulum.py
	$(VENV)/bin/python benchmarks/ppo_ant.py
	$(VENV)/bin/python benchmarks/device_inference.py
	$(VENV)/bin/python benchmarks/board_inference.py
	$(VENV)/bin/python benchmarks/xtensawin_baremetal.py
	$(VENV)/bin/python benchmarks/runtime_import.py
	$(VENV)/bin/python benchmarks/cycle_validation.py
	$(VENV)/bin/python benchmarks/arithmetic_bound.py
	$(VENV)/bin/python benchmarks/device_training.py
	$(VENV)/bin/python benchmarks/sac.py --no-sb3
	$(VENV)/bin/python benchmarks/quadrotor.py
	$(VENV)/bin/python benchmarks/gym_adapter.py
	$(VENV)/bin/python benchmarks/sweep.py

# The documentation site (build/site) with the tutorial notebooks executed, plots in the
# pages; they run in a copy of docs/, so their runs and files stay out of the source tree.
docs: venv firmware emulated
	rm -rf build/docs && mkdir -p build && cp -r docs build/docs
	NEUROMOTOR_DOCS_DIR=build/docs NEUROMOTOR_DOCS_EXECUTE=true $(VENV)/bin/mkdocs build --strict

clean:
	rm -rf $(VENV) build
