"""`neuromotor serve-web [--port 8000]`: the browser board's page on 127.0.0.1."""

from neuromotor.cli import checks


def register(sub):
    p = sub.add_parser("serve-web", help="serve the in-browser TD3 demo (MicroPython in WebAssembly) on 127.0.0.1",
                       description="Serve the page that trains TD3 on the pendulum with the on-board trainer "
                       "in the browser, runs .nmp policies and downloads the trained one. Local only "
                       "(127.0.0.1); needs `make firmware BOARD=browser`.")
    p.add_argument("--port", type=int, default=8000, help="TCP port (default 8000; 0 picks a free one)")
    p.add_argument("--log", action="store_true", help="print one line per request")
    p.set_defaults(func=run)


def run(args):
    from neuromotor import api

    checks.int_range("--port", args.port, 0, 65535)
    server, url = api.web_server(args.port, log=args.log)
    print(f"serving {url} (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped")
    finally:
        server.server_close()
    return 0
