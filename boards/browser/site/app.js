// The page: controls, the pendulum and the learning curve. The board (MicroPython with
// the trainer) runs in worker.js. URL parameters ?seed=N&steps=N set the first run, which
// starts on load so a visitor sees the pendulum move at once.
//
// window.nmState holds what the page shows (steps, returns, timings, the trained policy's
// availability); window.nmActions(obs) runs the loaded policy on a Float32Array of
// pendulum observations (n x 3) and resolves to its actions.
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
if (params.has("seed")) $("seed").value = params.get("seed");
if (params.has("steps")) $("total").value = params.get("steps");

const state = {
    status: "loading", steps: 0, returns: [], returnSteps: [], elapsedMs: 0, trainMs: null,
    evalReturn: null, firstMotionMs: null, policyReady: false, policyBytes: 0, loaded: null,
    episodeReturn: null, error: null, done: false,
};
window.nmState = state;

const worker = new Worker("worker.js", { type: "module" });
const frames = []; // pendulum angles still to draw
let mode = "";
let playRealTime = false;
let trainedPolicy = null;
let trainStart = 0;
let totalSteps = 0;
const pending = new Map();
let nextId = 1;

function setStatus(text) {
    $("status").textContent = text;
}

function setMode(text) {
    mode = text;
    $("mode").textContent = text;
}

// ---- drawing -----------------------------------------------------------------
function drawPendulum(theta) {
    const c = $("pendulum");
    const g = c.getContext("2d");
    const w = c.width, h = c.height, cx = w / 2, cy = h / 2, len = 0.36 * w;
    g.clearRect(0, 0, w, h);
    // theta = 0 is upright (gymnasium's Pendulum-v1)
    const x = cx + len * Math.sin(theta), y = cy - len * Math.cos(theta);
    g.strokeStyle = "#ddd";
    g.beginPath();
    g.arc(cx, cy, len, 0, 2 * Math.PI);
    g.stroke();
    g.strokeStyle = "#c43";
    g.lineWidth = 14;
    g.lineCap = "round";
    g.beginPath();
    g.moveTo(cx, cy);
    g.lineTo(x, y);
    g.stroke();
    g.fillStyle = "#333";
    g.beginPath();
    g.arc(cx, cy, 5, 0, 2 * Math.PI);
    g.fill();
}

function drawCurve() {
    const c = $("curve");
    const g = c.getContext("2d");
    const w = c.width, h = c.height, m = 36;
    const lo = -1800, hi = 0;
    const xmax = Math.max(totalSteps, 1000);
    const X = (s) => m + (w - m - 8) * (s / xmax);
    const Y = (r) => 8 + (h - m - 8) * (1 - (Math.max(lo, Math.min(hi, r)) - lo) / (hi - lo));
    g.clearRect(0, 0, w, h);
    g.font = "11px sans-serif";
    g.fillStyle = "#666";
    g.strokeStyle = "#ddd";
    g.lineWidth = 1;
    for (let r = lo; r <= hi; r += 300) {
        g.beginPath();
        g.moveTo(m, Y(r));
        g.lineTo(w - 8, Y(r));
        g.stroke();
        g.fillText(String(r), 2, Y(r) + 4);
    }
    g.fillText(`${xmax} steps`, w - 70, h - 10);
    g.strokeStyle = "#2a7";
    g.setLineDash([4, 4]);
    g.beginPath();
    g.moveTo(m, Y(-200));
    g.lineTo(w - 8, Y(-200));
    g.stroke();
    g.setLineDash([]);
    g.strokeStyle = "#36c";
    g.fillStyle = "#36c";
    g.lineWidth = 2;
    g.beginPath();
    state.returns.forEach((r, i) => {
        const px = X(state.returnSteps[i]), py = Y(r);
        if (i === 0) g.moveTo(px, py); else g.lineTo(px, py);
    });
    g.stroke();
    state.returns.forEach((r, i) => g.fillRect(X(state.returnSteps[i]) - 2, Y(r) - 2, 4, 4));
}

let lastFrame = 0;
function animate(now) {
    // training runs faster than real time: show the newest motion, skipping frames when
    // behind; a policy episode plays at the pendulum's own 20 steps per second
    if (frames.length) {
        if (playRealTime) {
            if (now - lastFrame >= 50) {
                drawPendulum(frames.shift());
                lastFrame = now;
            }
        } else {
            const skip = Math.max(1, Math.floor(frames.length / 30));
            const theta = frames.splice(0, skip).pop();
            drawPendulum(theta);
            if (state.firstMotionMs === null) state.firstMotionMs = performance.now();
        }
    }
    if (state.status === "training") {
        state.elapsedMs = performance.now() - trainStart;
        $("elapsed").textContent = `${(state.elapsedMs / 1000).toFixed(1)} s`;
    }
    requestAnimationFrame(animate);
}

// ---- worker messages ---------------------------------------------------------
worker.onmessage = (e) => {
    const m = e.data;
    switch (m.kind) {
        case "ready":
            setStatus("MicroPython ready");
            break;
        case "progress":
            state.steps = m.steps;
            frames.push(...m.theta);
            if (frames.length > 2000) frames.splice(0, frames.length - 2000);
            for (const r of m.returns) {
                state.returns.push(r);
                state.returnSteps.push(m.steps);
                $("last").textContent = r.toFixed(0);
            }
            $("steps").textContent = String(m.steps);
            $("rate").textContent = (m.steps / (m.ms / 1000)).toFixed(0);
            if (m.returns.length) drawCurve();
            break;
        case "trained": {
            state.status = "trained";
            state.trainMs = m.ms;
            state.elapsedMs = m.ms;
            state.steps = m.steps;
            state.evalReturn = m.evalReturn;
            trainedPolicy = m.policy;
            state.policyReady = true;
            state.policyBytes = m.policy.length;
            const url = URL.createObjectURL(new Blob([m.policy], { type: "application/octet-stream" }));
            $("download").href = url;
            $("download").classList.remove("disabled");
            $("run").disabled = false;
            $("train").disabled = false;
            $("stop").disabled = true;
            $("elapsed").textContent = `${(m.ms / 1000).toFixed(1)} s`;
            $("rate").textContent = (m.steps / (m.ms / 1000)).toFixed(0);
            setStatus(`trained ${m.steps} steps in ${(m.ms / 1000).toFixed(1)} s; ` +
                      `deterministic return over 10 episodes ${m.evalReturn.toFixed(0)}`);
            state.done = true;
            break;
        }
        case "loaded":
            state.loaded = { obsDim: m.obsDim, actDim: m.actDim };
            break;
        case "episode":
            state.episodeReturn = m.ret;
            playRealTime = true;
            frames.length = 0;
            frames.push(...m.theta);
            setStatus(`policy episode: return ${m.ret.toFixed(0)}`);
            break;
        case "actions": {
            const p = pending.get(m.id);
            pending.delete(m.id);
            if (p) p.resolve(Array.from(m.actions));
            break;
        }
        case "error":
            state.error = m.message;
            state.status = "error";
            setStatus(`error: ${m.message}`);
            for (const p of pending.values()) p.reject(new Error(m.message));
            pending.clear();
            $("train").disabled = false;
            $("stop").disabled = true;
            break;
    }
};

// ---- controls ----------------------------------------------------------------
function startTraining() {
    const seed = Math.max(0, parseInt($("seed").value, 10) || 0);
    totalSteps = Math.max(200, parseInt($("total").value, 10) || 10000);
    Object.assign(state, { status: "training", steps: 0, returns: [], returnSteps: [], done: false,
                           evalReturn: null, trainMs: null, error: null });
    playRealTime = false;
    frames.length = 0;
    drawCurve();
    trainStart = performance.now();
    $("train").disabled = true;
    $("stop").disabled = false;
    setMode(`training, seed ${seed}`);
    setStatus("training");
    worker.postMessage({ cmd: "train", seed, steps: totalSteps, chunk: 100 });
}

function runPolicy(bytes, name) {
    setMode(`policy: ${name}`);
    worker.postMessage({ cmd: "load", bytes });
    worker.postMessage({ cmd: "run", seed: Math.floor(Math.random() * 1e6) });
}

$("train").onclick = startTraining;
$("stop").onclick = () => worker.postMessage({ cmd: "stop" });
$("run").onclick = () => trainedPolicy && runPolicy(trainedPolicy.slice(), "just trained");

async function openFile(file) {
    if (!file) return;
    if (state.status === "training") {
        setStatus("stop the training first");
        return;
    }
    runPolicy(new Uint8Array(await file.arrayBuffer()), file.name);
}
$("file").onchange = (e) => openFile(e.target.files[0]);
const drop = $("drop");
drop.ondragover = (e) => {
    e.preventDefault();
    drop.classList.add("over");
};
drop.ondragleave = () => drop.classList.remove("over");
drop.ondrop = (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    openFile(e.dataTransfer.files[0]);
};

window.nmActions = (obs) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve, reject });
    worker.postMessage({ cmd: "actions", id, obs: Float32Array.from(obs) });
});
window.nmLoadPolicy = (bytes) => worker.postMessage({ cmd: "load", bytes: Uint8Array.from(bytes) });

drawPendulum(Math.PI);
drawCurve();
requestAnimationFrame(animate);
startTraining();
