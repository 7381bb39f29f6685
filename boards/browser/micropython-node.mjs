#!/usr/bin/env node
// The browser build run under Node with the unix port's command line, so the tests and
// benchmarks that drive `micropython` drive this build the same way:
//
//   micropython-node.mjs [-X heapsize=64M] (-c SCRIPT | FILE)
//
// The build is $NEUROMOTOR_BROWSER_MJS, else $NEUROMOTOR_CACHE/firmware/browser/
// micropython.mjs (`make firmware BOARD=browser`). The host's directories appear at their
// own paths (NODEFS), so scripts open host files as on the unix port. A Python exception
// prints its traceback to stderr and exits 1; SystemExit(n) exits n.
import fs from "fs";
import os from "os";
import path from "path";
import { createRequire } from "module";
import { pathToFileURL } from "url";

function usage(msg) {
    process.stderr.write(`micropython-node: ${msg}\nusage: micropython-node.mjs [-X heapsize=N[k|M]] (-c SCRIPT | FILE)\n`);
    process.exit(2);
}

function parseSize(text) {
    const m = /^(\d+)([kKmM]?)$/.exec(text);
    if (!m) usage(`bad heap size ${text}`);
    return Number(m[1]) * ({ "": 1, k: 1024, K: 1024, m: 1 << 20, M: 1 << 20 })[m[2]];
}

let heapsize = 16 << 20;
let code = null;
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "-X" && i + 1 < argv.length && argv[i + 1].startsWith("heapsize=")) {
        heapsize = parseSize(argv[++i].slice("heapsize=".length));
    } else if (argv[i] === "-c" && i + 1 < argv.length) {
        code = argv[++i];
    } else if (code === null && !argv[i].startsWith("-")) {
        code = fs.readFileSync(argv[i], "utf8");
    } else {
        usage(`unexpected argument ${argv[i]}`);
    }
}
if (code === null) usage("nothing to run");

const cache = process.env.NEUROMOTOR_CACHE || path.join(os.homedir(), ".cache", "neuromotor");
const mjs = process.env.NEUROMOTOR_BROWSER_MJS || path.join(cache, "firmware", "browser", "micropython.mjs");
if (!fs.existsSync(mjs)) {
    process.stderr.write(`micropython-node: ${mjs} missing: run \`make firmware BOARD=browser\`\n`);
    process.exit(2);
}
// The emscripten module is an ES module written for browsers and Node alike: under Node it
// wants CommonJS's require and __dirname, and reads the .wasm from disk only without fetch.
globalThis.require = createRequire(mjs);
globalThis.__dirname = path.dirname(mjs);
globalThis.fetch = undefined;
const { loadMicroPython } = await import(pathToFileURL(mjs).href);

const mp = await loadMicroPython({
    heapsize,
    stdout: (data) => fs.writeSync(1, data),
    stderr: (data) => fs.writeSync(2, data),
    linebuffer: false,
});
const FS = mp.FS;
const NODEFS = FS.filesystems.NODEFS;
for (const name of fs.readdirSync("/")) {
    if (["dev", "proc", "sys"].includes(name)) continue;
    const host = "/" + name;
    let st;
    try {
        st = fs.statSync(host);
    } catch (e) {
        continue;
    }
    if (!st.isDirectory()) continue;
    try {
        FS.mkdir(host);
    } catch (e) {
        // already there (emscripten's /tmp, /home)
    }
    FS.mount(NODEFS, { root: host }, host);
}

let status = 0;
try {
    mp.runPython(code);
} catch (error) {
    if (error.name !== "PythonError") throw error;
    if (error.type === "SystemExit") {
        const m = /(\d+)\s*$/.exec(error.message);
        status = m ? Number(m[1]) : 0;
    } else {
        fs.writeSync(2, error.message.endsWith("\n") ? error.message : error.message + "\n");
        status = 1;
    }
}
process.exit(status);
