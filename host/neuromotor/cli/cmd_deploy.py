"""`neuromotor deploy RUN|POLICY --port PORT`: put a policy and the runtime on a board."""

from neuromotor.cli import checks, json_line


def register(sub):
    p = sub.add_parser("deploy", help="deploy a run's policy (or a policy file) to a board with mpremote",
                       description="Export the run's policy (or take a policy file), compile device/lib "
                       "with mpy-cross for the board's .mpy arch, copy the matching native kernels, "
                       "upload everything under temporary names, check every file by hash on the "
                       "board and only then rename it into place.")
    p.add_argument("source", help="run directory or policy file")
    p.add_argument("--port", default="auto", help="serial port, or 'auto' for the single detected/running board")
    p.add_argument("--dry-run", action="store_true", help="print what would be done; write nothing")
    p.add_argument("--dest", default="/policy.nmp", help="policy path on the board (default /policy.nmp)")
    p.add_argument("--natmod", choices=["auto", "always", "never"], default="auto",
                   help="native kernel .mpy files: auto (default) copies those the firmware does not "
                   "have built in; always; never")
    p.add_argument("--full", action="store_true", help="upload every file even if the board has it already")
    p.add_argument("--json", action="store_true", help="end with one JSON line describing the deploy")
    p.set_defaults(func=run)


def run(args):
    from neuromotor import api

    checks.source("source", args.source)
    checks.board_path("--dest", args.dest)
    board = api.Board(args.port)
    port = board.port
    print(f"deploy: {args.source} -> {port}")
    res = board.deploy(args.source, dest=args.dest, natmod=args.natmod, full=args.full, dry_run=args.dry_run,
                       verbose=True)
    if args.json:
        b = res["board"]
        print(json_line({"port": port, "dry_run": res["dry_run"], "arch": b["arch"],
                          "version": ".".join(map(str, b["version"])), "platform": b["platform"],
                          "files": res["files"], "backend": res.get("backend"),
                          "policy_sha256": res.get("policy_sha256")}))
    return 0
