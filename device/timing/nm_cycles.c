/*
 * nm_cycles: a QEMU TCG plugin that turns executed instructions into cycles.
 *
 * Each translated block is decoded once (Thumb-2/ARMv7E-M with the FPv4/FPv5
 * extension, or RV32IMAC), every instruction is classified and the block's cost
 * is computed from the timing tables of one core model (docs/timing-model.md):
 *
 *   core=cortex-m4   Cortex-M4 TRM instruction timings (table sum, load/store
 *                    pipelining, 1+N multiples, branch refill P)
 *   core=cortex-m7   dual-issue in-order scoreboard (pairing rules, load-use and
 *                    FPU latencies, static branch prediction), kept across blocks:
 *                    each executed block's decoded instructions issue at run time
 *   core=rv32imc     single-issue in-order (load-use stall, taken-branch refill)
 *
 * At run time one callback per executed block adds the block's cycles (the M7 model
 * schedules the block's instructions on its running scoreboard there) and charges
 * the branch that ended the previous block as taken or not taken, by comparing
 * this block's address with the previous block's fall-through address.
 *
 * Arguments (-plugin libnm_cycles.so,core=cortex-m7,out=FILE[,mark=0xADDR]):
 *   out   a file the counters live in (mmap'd, MAP_SHARED): a host process reads
 *         them while the guest runs (layout: struct nm_counters below)
 *   mark  a guest address (the first instruction of a marker function): every
 *         execution of the block starting there appends a snapshot of the counters
 *
 * Only the handful of QEMU plugin API functions used here are declared (QEMU
 * 7.2's documented include/qemu/qemu-plugin.h, API version 1).
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "nm_core_models.h"
#include "nm_decode_rv.h"
#include "nm_decode_thumb.h"
#include "nm_insn.h"

/* ---- QEMU plugin API (declarations from the documented interface) ----------------- */

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_plugin_insn;
typedef struct {
    const char *target_name;
    struct {
        int min;
        int cur;
    } version;
    bool system_emulation;
    union {
        int smp_vcpus;
        struct {
            int smp_vcpus;
            int max_vcpus;
        } system;
    };
} qemu_info_t;
enum qemu_plugin_cb_flags { QEMU_PLUGIN_CB_NO_REGS = 0 };
typedef void (*qemu_plugin_vcpu_tb_trans_cb_t)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*qemu_plugin_vcpu_udata_cb_t)(unsigned int vcpu_index, void *userdata);
typedef void (*qemu_plugin_udata_cb_t)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, qemu_plugin_vcpu_tb_trans_cb_t cb);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, qemu_plugin_vcpu_udata_cb_t cb,
                                          enum qemu_plugin_cb_flags flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, qemu_plugin_udata_cb_t cb, void *userdata);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
struct qemu_plugin_insn *qemu_plugin_tb_get_insn(const struct qemu_plugin_tb *tb, size_t idx);
const void *qemu_plugin_insn_data(const struct qemu_plugin_insn *insn);
size_t qemu_plugin_insn_size(const struct qemu_plugin_insn *insn);
uint64_t qemu_plugin_insn_vaddr(const struct qemu_plugin_insn *insn);
void qemu_plugin_outs(const char *string);

__attribute__((visibility("default"))) int qemu_plugin_version = 1;

/* ---- counters shared with the host ------------------------------------------------ */

#define NM_MAX_MARKS 64
struct nm_counters {
    char magic[8];        /* "NMCYC1\0\0" */
    uint64_t core;        /* 4 = cortex-m4, 7 = cortex-m7, 32 = rv32imc */
    uint64_t insns;       /* executed instructions */
    uint64_t cycles;      /* modelled cycles with zero wait states */
    uint64_t beats;       /* 32-bit data transfers (loads and stores), for wait states */
    uint64_t n_marks;
    uint64_t marks[NM_MAX_MARKS][3]; /* insns, cycles, beats at each marker execution */
};

static struct nm_counters *ctr;
static struct nm_counters local_ctr; /* without out=: counters printed at exit only */

/* ---- translation and execution ------------------------------------------------------------ */

static uint64_t mark_addr = ~0ull;
static tb_cost_t *pending; /* previous block, when it ended in a conditional branch */
static FILE *log_file;

static void tb_exec(unsigned int vcpu, void *udata) {
    (void)vcpu;
    tb_cost_t *t = udata;
    struct nm_counters *c = ctr;
    uint32_t penalty = 0;
    if (pending) {
        penalty = t->vaddr != pending->fallthrough ? pending->taken : pending->not_taken;
        pending = NULL;
    }
    c->insns += t->insns;
    if (t->v) {
        uint64_t before = m7.cycle;
        m7_stall(penalty);
        for (size_t i = 0; i < t->n; i++) {
            m7_issue(&m7, &t->v[i]);
        }
        m7_stall(t->end_penalty);
        c->cycles += m7.cycle - before;
    } else {
        c->cycles += t->cycles + penalty;
    }
    c->beats += t->beats;
    if (t->fallthrough) {
        pending = t;
    }
    if (t->mark && c->n_marks < NM_MAX_MARKS) {
        uint64_t *m = c->marks[c->n_marks];
        m[0] = c->insns;
        m[1] = c->cycles;
        m[2] = c->beats;
        c->n_marks++;
    }
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb) {
    (void)id;
    size_t n = qemu_plugin_tb_n_insns(tb);
    insn_t *v = calloc(n ? n : 1, sizeof(insn_t));
    tb_cost_t *t = calloc(1, sizeof(tb_cost_t));
    if (!v || !t) {
        free(v);
        free(t);
        return;
    }
    t->vaddr = qemu_plugin_tb_vaddr(tb);
    t->insns = n;
    t->mark = t->vaddr == mark_addr;
    for (size_t i = 0; i < n; i++) {
        struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
        size_t size = qemu_plugin_insn_size(in);
        uint8_t bytes[4] = {0};
        memcpy(bytes, qemu_plugin_insn_data(in), size < 4 ? size : 4);
        v[i].pc = qemu_plugin_insn_vaddr(in);
        v[i].size = (uint8_t)size;
        if (core == CORE_RV32) {
            decode_rv(&v[i], bytes, size);
        } else {
            decode_thumb(&v[i], bytes, size);
        }
        t->beats += beats_of(&v[i]);
    }
    insn_t *last = n ? &v[n - 1] : NULL;
    bool cond_end = last && last->cls == K_BC;
    if (cond_end) {
        t->fallthrough = last->pc + last->size;
    }
    if (core == CORE_M4) {
        for (size_t i = 0; i < n; i++) {
            t->cycles += m4_cost(&v[i], i ? &v[i - 1] : NULL);
        }
        t->taken = M4_P;
        t->not_taken = 0;
    } else if (core == CORE_RV32) {
        for (size_t i = 0; i < n; i++) {
            t->cycles += rv_cost(&v[i], i ? &v[i - 1] : NULL);
        }
        t->taken = RV_TAKEN;
        t->not_taken = 0;
    } else {
        bool backward = cond_end && last->target && last->target <= last->pc;
        t->taken = backward ? 0 : M7_MISPREDICT;
        t->not_taken = backward ? M7_MISPREDICT : 0;
        t->end_penalty = last && last->cls == K_BI ? M7_MISPREDICT : 0;
        t->v = v;
        t->n = n;
    }
    if (log_file) {
        fprintf(log_file, "tb %#llx n=%zu cycles=%llu taken=%u not_taken=%u\n", (unsigned long long)t->vaddr, n,
                (unsigned long long)t->cycles, t->taken, t->not_taken);
        for (size_t i = 0; i < n; i++) {
            fprintf(log_file, "  %#llx size=%u cls=%u n=%u\n", (unsigned long long)v[i].pc, v[i].size, v[i].cls,
                    v[i].n);
        }
        fflush(log_file); /* complete even when QEMU is ended by a signal */
    }
    if (!t->v) {
        free(v);
    }
    qemu_plugin_register_vcpu_tb_exec_cb(tb, tb_exec, QEMU_PLUGIN_CB_NO_REGS, t);
}

static void at_exit(qemu_plugin_id_t id, void *udata) {
    (void)id;
    (void)udata;
    char line[160];
    snprintf(line, sizeof(line), "nm_cycles: core=%llu insns=%llu cycles=%llu beats=%llu\n",
             (unsigned long long)ctr->core, (unsigned long long)ctr->insns, (unsigned long long)ctr->cycles,
             (unsigned long long)ctr->beats);
    qemu_plugin_outs(line);
    if (ctr != &local_ctr) {
        msync(ctr, sizeof(*ctr), MS_SYNC);
    }
    if (log_file) {
        fclose(log_file);
    }
}

__attribute__((visibility("default"))) int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
                                                               int argc, char **argv) {
    const char *out = NULL;
    bool rv = info && info->target_name && strncmp(info->target_name, "riscv", 5) == 0;
    core = rv ? CORE_RV32 : CORE_M7;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "core=cortex-m4") == 0 || strcmp(a, "core=cortex-m4f") == 0) {
            core = CORE_M4;
        } else if (strcmp(a, "core=cortex-m7") == 0) {
            core = CORE_M7;
        } else if (strcmp(a, "core=rv32imc") == 0 || strcmp(a, "core=rv32imac") == 0) {
            core = CORE_RV32;
        } else if (strncmp(a, "out=", 4) == 0) {
            out = a + 4;
        } else if (strncmp(a, "mark=", 5) == 0) {
            char *end;
            mark_addr = strtoull(a + 5, &end, 0) & ~1ull;
            if (*end) {
                fprintf(stderr, "nm_cycles: bad mark address %s\n", a + 5);
                return -1;
            }
        } else if (strncmp(a, "log=", 4) == 0) { /* every translated block, decoded (for tests) */
            log_file = fopen(a + 4, "w");
            if (!log_file) {
                fprintf(stderr, "nm_cycles: cannot write %s\n", a + 4);
                return -1;
            }
        } else {
            fprintf(stderr, "nm_cycles: unknown argument %s (core=, out=, mark=, log=)\n", a);
            return -1;
        }
    }
    if ((core == CORE_RV32) != rv) {
        fprintf(stderr, "nm_cycles: the core model does not match the emulated target %s\n",
                info && info->target_name ? info->target_name : "?");
        return -1;
    }
    ctr = &local_ctr;
    if (out) {
        int fd = open(out, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || ftruncate(fd, sizeof(struct nm_counters)) != 0) {
            fprintf(stderr, "nm_cycles: cannot create %s\n", out);
            if (fd >= 0) {
                close(fd);
            }
            return -1;
        }
        void *m = mmap(NULL, sizeof(struct nm_counters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (m == MAP_FAILED) {
            fprintf(stderr, "nm_cycles: cannot map %s\n", out);
            return -1;
        }
        ctr = m;
    }
    memset(ctr, 0, sizeof(*ctr));
    memcpy(ctr->magic, "NMCYC1", 6);
    ctr->core = core;
    qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
    qemu_plugin_register_atexit_cb(id, at_exit, NULL);
    return 0;
}
