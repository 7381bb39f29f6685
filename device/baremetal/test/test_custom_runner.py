"""`pio test -e qemu-m7` (or qemu-m4f): build the bare-metal timing program, run it under
QEMU and check its NMB/1 bench line. A custom runner: nothing is downloaded (no Unity)."""

import json
import os
import subprocess

from platformio.public import TestCase, TestRunnerBase, TestStatus


class CustomTestRunner(TestRunnerBase):
    def stage_building(self):
        return self.run_project_targets(["__test"])

    def stage_uploading(self):
        return None  # QEMU loads the ELF itself

    def stage_testing(self):
        env = self.test_suite.env_name
        section = f"env:{env}"
        elf = os.path.join(self.project_config.get("platformio", "build_dir"), env, "program.elf")
        cmd = ["qemu-system-arm", "-machine", self.project_config.get(section, "custom_qemu_machine"),
               "-nographic", "-monitor", "none", "-serial", "none", "-semihosting", "-icount", "shift=0",
               "-kernel", elf]
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
            output, code = res.stdout + res.stderr, res.returncode
        except subprocess.TimeoutExpired:
            output, code = "timed out after 120 s", -1
        for line in output.splitlines():
            self.on_testing_line_output(line + "\n")
        bench = next((x for x in output.splitlines() if x.startswith("@nm - bench ")), None)
        problems = []
        if code != 0:
            problems.append(f"QEMU exited with {code}")
        if bench is None:
            problems.append("no @nm - bench line")
        else:
            body, _, ck = bench.rpartition(" ~")
            if ck != format(sum(body.encode()) & 0xFFFF, "04x"):
                problems.append("bad NMB/1 checksum")
            r = json.loads(body[len("@nm - bench "):])
            if r.get("max_abs_err_e9", 10**9) > 10000:
                problems.append(f"kernel disagrees with the reference: {r.get('max_abs_err_e9')}e-9")
            if set(r.get("backends", {})) != {"native", "generic"}:
                problems.append(f"backends {sorted(r.get('backends', {}))}")
        self.test_suite.add_case(TestCase(name=f"{env}:program", status=TestStatus.FAILED if problems
                                          else TestStatus.PASSED, message="; ".join(problems) or None))
        self.test_suite.on_finish()
