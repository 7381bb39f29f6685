"""`neuromotor bench --port PORT [--port PORT2 ...]`: inference latency on boards over serial."""

from neuromotor.cli import checks, json_line


def register(sub):
    p = sub.add_parser("bench", help="time policy inference on boards over the serial line (NMB/1)",
                       description="Start the bench server on each board, time N inferences per "
                       "available backend (time.ticks_us on the board), print backend x µs x kHz, "
                       "write bench.json and bench.png. Emulated boards report instruction-count time.")
    p.add_argument("--port", action="append", help="serial port (repeat to compare boards); default auto")
    p.add_argument("-n", type=int, default=1000, help="inferences per backend (python backend: n/20)")
    p.add_argument("--backend", action="append", choices=["native", "ulab", "python"],
                   help="only these backends (default: every backend the board has)")
    p.add_argument("--out", help="directory for bench.json and bench.png (default: a new runs/bench-<time>)")
    p.add_argument("--predict-mhz", type=float, default=None,
                   help="clock for predicted µs on emulated boards (default: the board's own, "
                        "240 for qemu-xtensa (ESP32); 600 (Teensy 4.1) for the others)")
    p.add_argument("--json", action="store_true", help="end with one JSON line: per backend median_us, "
                   "p99_us (and instructions_per_mac on emulated boards)")
    p.set_defaults(func=run)


def run(args):
    from neuromotor import api

    checks.int_range("-n", args.n, 1, 10**7)
    if args.predict_mhz is not None:
        checks.positive_float("--predict-mhz (a clock in MHz)", args.predict_mhz)
    res = api.bench(args.port, n=args.n, backends=args.backend, out=args.out, predict_mhz=args.predict_mhz,
                    verbose=True)
    print(res.table)
    print(f"wrote {res.json_path} and {res.png_path}")
    if args.json:
        print(json_line(res.summary))
    return 0
