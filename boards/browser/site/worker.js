// The board: MicroPython (micropython.mjs, the browser build) in a Web Worker. It trains
// with nm_td3 in chunks of steps, handing control back to JavaScript between chunks (the
// GC collects there, and a "stop" message gets in), and runs policy files through
// neuromotor_rt on nm_pendulum.
//
// Messages in:  {cmd: "train", seed, steps, chunk}  {cmd: "stop"}
//               {cmd: "load", bytes}  (a .nmp)      {cmd: "run", seed}  (one episode)
//               {cmd: "actions", obs: Float32Array, id}  (the loaded policy, n x obs_dim)
// Messages out: {kind: "ready"}  {kind: "progress", steps, theta, returns, ms}
//               {kind: "trained", steps, ms, evalReturn, policy: Uint8Array}
//               {kind: "loaded", obsDim, actDim}  {kind: "episode", theta, ret}
//               {kind: "actions", id, actions: Float32Array}  {kind: "error", message}
import { loadMicroPython } from "./micropython.mjs";

const HEAP = 8 * 1024 * 1024; // the teensy41 profile needs about 1 MB; the heap grows beyond
let mp = null;
let stopRequested = false;
let busy = false;

const SETUP = `
import json
from array import array
import nm_td3
import neuromotor_rt
from nm_pendulum import Pendulum

class _Web:
    trainer = None
    policy = None
    theta = None
    seen = 0

def _web_train_start(seed, chunk):
    _Web.trainer = nm_td3.Trainer("teensy41", seed=seed, check_memory=False)
    _Web.theta = array("f", range(chunk))
    _Web.seen = 0

def _web_train_chunk(n):
    t, th = _Web.trainer, _Web.theta
    for i in range(n):
        t.step()
        th[i] = t.env.state[0]
    new = t.episodes - _Web.seen
    _Web.seen = t.episodes
    rets = t.returns[len(t.returns) - new:] if new else []
    return json.dumps({"steps": t.steps, "theta": list(th[:n]), "returns": rets})

def _web_train_finish(path):
    t = _Web.trainer
    ev = t.evaluate(10)
    t.save_policy(path)
    return ev

def _web_load(path):
    p = neuromotor_rt.Policy.load(path)
    if p.obs_dim != 3 or p.act_dim != 1:
        raise ValueError("this page runs pendulum policies (3 observations, 1 action); the file has %d and %d"
                         % (p.obs_dim, p.act_dim))
    _Web.policy = p
    return json.dumps([p.obs_dim, p.act_dim])

def _web_episode(seed):
    env = Pendulum()
    r = nm_td3.Rng(nm_td3.kernels(), seed)
    one = array("f", [0.0])
    def uniform(lo, hi):
        r.uniform(one, lo, hi)
        return one[0]
    env.reset(uniform)
    p, th, ret = _Web.policy, [], 0.0
    for _ in range(env.max_episode_steps):
        a = p(env.obs)
        ret += env.step(a[0])
        th.append(env.state[0])
    return json.dumps({"theta": th, "ret": ret})

def _web_actions(src, dst, n):
    p = _Web.policy
    d, k = p.obs_dim, p.act_dim
    obs = array("f", range(n * d))
    with open(src, "rb") as f:
        f.readinto(obs)
    out = array("f", range(n * k))
    x = array("f", range(d))
    for i in range(n):
        for j in range(d):
            x[j] = obs[i * d + j]
        y = p(x)
        for j in range(k):
            out[i * k + j] = y[j]
    with open(dst, "wb") as f:
        f.write(out)
`;

function post(msg, transfer) {
    self.postMessage(msg, transfer || []);
}

// The Python functions of SETUP, called through the port's proxies (runPython returns
// None: a module's code has no value).
let fn = null;

const idle = () => new Promise((resolve) => setTimeout(resolve, 0));

async function train({ seed, steps, chunk }) {
    const t0 = performance.now();
    fn.trainStart(seed | 0, chunk | 0);
    let done = 0;
    while (done < steps && !stopRequested) {
        const n = Math.min(chunk, steps - done);
        const r = JSON.parse(fn.trainChunk(n));
        done = r.steps;
        post({ kind: "progress", steps: r.steps, theta: r.theta, returns: r.returns, ms: performance.now() - t0 });
        await idle();
    }
    const ms = performance.now() - t0;
    const evalReturn = fn.trainFinish("/td3_policy.nmp");
    const policy = mp.FS.readFile("/td3_policy.nmp");
    post({ kind: "trained", steps: done, ms, evalReturn, policy }, [policy.buffer]);
}

async function handle(msg) {
    switch (msg.cmd) {
        case "train":
            stopRequested = false;
            await train(msg);
            break;
        case "load": {
            mp.FS.writeFile("/web_policy.nmp", new Uint8Array(msg.bytes));
            const [obsDim, actDim] = JSON.parse(fn.load("/web_policy.nmp"));
            post({ kind: "loaded", obsDim, actDim });
            break;
        }
        case "run": {
            const r = JSON.parse(fn.episode(msg.seed | 0));
            post({ kind: "episode", theta: r.theta, ret: r.ret });
            break;
        }
        case "actions": {
            const n = msg.obs.length / 3;
            mp.FS.writeFile("/web_obs.f32", new Uint8Array(msg.obs.buffer));
            fn.actions("/web_obs.f32", "/web_act.f32", n | 0);
            const bytes = mp.FS.readFile("/web_act.f32");
            const actions = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.length / 4);
            post({ kind: "actions", id: msg.id, actions });
            break;
        }
        default:
            throw new Error(`unknown command ${msg.cmd}`);
    }
}

const queue = [];
async function drain() {
    if (busy) return;
    busy = true;
    while (queue.length) {
        const msg = queue.shift();
        try {
            await handle(msg);
        } catch (e) {
            // a Python exception's message is its traceback: the page shows the last line
            post({ kind: "error", message: (e.message || String(e)).trim().split("\n").pop() });
        }
    }
    busy = false;
}

self.onmessage = (e) => {
    if (e.data.cmd === "stop") {
        stopRequested = true;
        return;
    }
    queue.push(e.data);
    if (mp) drain();
};

try {
    mp = await loadMicroPython({ heapsize: HEAP, stdout: (line) => console.log(line), stderr: (line) => console.error(line) });
    mp.runPython(SETUP);
    const g = (name) => mp.globals.get(name);
    fn = { trainStart: g("_web_train_start"), trainChunk: g("_web_train_chunk"), trainFinish: g("_web_train_finish"),
           load: g("_web_load"), episode: g("_web_episode"), actions: g("_web_actions") };
    post({ kind: "ready" });
    drain();
} catch (e) {
    post({ kind: "error", message: `MicroPython did not start: ${e.message || e}` });
}
