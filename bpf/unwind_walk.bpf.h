/* unwind_walk.bpf.h - the user-stack walker of profiler.bpf.c: unwinds with the
 * compact tables the runtime loaded (unwind.h), one frame per bpf_loop
 * iteration, and by frame pointer where an address has no table (JIT code,
 * anonymous memory, a file without .eh_frame) or its row says so. It owns
 * the maps it reads (tables, processes, walks); the caller gives it the
 * stack to fill and counts what the walk reports. BPF only, included once
 * per object: it defines maps and a global function. */
#ifndef MR_BPF_UNWIND_WALK_BPF_H
#define MR_BPF_UNWIND_WALK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "arch.bpf.h"
#include "kernel_defs.bpf.h"
#include "profiler.h"
#include "unwind.h"

/* The mappings (index 0..8 halvings) and rows (MR_UNWIND_ROW_SEARCH_STEPS). */
#define MAPPING_SEARCH_STEPS 9
#define ROW_SEARCH_STEPS MR_UNWIND_ROW_SEARCH_STEPS

struct unwind_rows {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	/* Sizes, not types: clang emits only a declaration of a struct seen
	 * through pointers, and libbpf cannot size that. */
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(struct mr_unwind_row));
};

/* Table id -> that file's rows, loaded by the runtime. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH_OF_MAPS);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__array(values, struct unwind_rows);
} unwind_tables SEC(".maps");

/* tgid -> its executable mappings, sorted. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 8192);
	__type(key, __s32);
	__type(value, struct mr_unwind_process);
} unwind_processes SEC(".maps");

/* The registers of the frame being unwound. */
struct walk {
	__u64 ip;
	__u64 sp;
	__u64 fp;
	__s32 pid;
	__u32 depth;
	__u32 exact;     /* ip is where the frame is, not a return address */
	__u32 unmapped;  /* an address was outside the process's mappings */
	__u32 pending;   /* a frame was in a mapping whose table is not built yet */
	__u32 fp_frames; /* frames unwound by frame pointer (no table for the address) */
	__u64 ask_addr;  /* the address to ask that table for; 0: none */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk);
} walks SEC(".maps");

/* MR_UNWIND_MAX_MAPPINGS is a power of two: masks keep indexes in bounds
 * where the verifier cannot follow the search's own bounds. */
#define MAPPING_MASK (MR_UNWIND_MAX_MAPPINGS - 1)

static __always_inline struct mr_unwind_mapping *mapping_of(struct mr_unwind_process *proc, __u64 pc)
{
	__u32 lo = 0, hi = proc->n, mid;

	if (hi > MR_UNWIND_MAX_MAPPINGS)
		return NULL;
	for (int i = 0; i < MAPPING_SEARCH_STEPS && lo < hi; i++) {
		mid = ((lo + hi) / 2) & MAPPING_MASK;
		if (proc->m[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	mid = (lo - 1) & MAPPING_MASK;
	if (pc >= proc->m[mid].end)
		return NULL;
	return &proc->m[mid];
}

/* The row covering vaddr in table id of n rows, copied to out; -1 if none.
 * A global function, so that the verifier checks its search once, on its
 * own: inlined into the walk's bpf_loop callback, the search's branches on
 * every frame took it past its million-instruction limit (Linux 6.18 checks
 * a callback until its states converge). */
__noinline int mr_unwind_row_of(__u32 id, __u32 n, __u64 vaddr, struct mr_unwind_row *out)
{
	void *rows = bpf_map_lookup_elem(&unwind_tables, &id);
	struct mr_unwind_row *r;
	__u32 lo = 0, hi = n, mid;

	if (!rows || !out)
		return -1;
	for (int i = 0; i < ROW_SEARCH_STEPS && lo < hi; i++) {
		mid = (lo + hi) / 2;
		r = bpf_map_lookup_elem(rows, &mid);
		if (!r)
			return -1;
		if (r->pc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	lo--;
	r = bpf_map_lookup_elem(rows, &lo);
	if (!r)
		return -1;
	*out = *r;
	return 0;
}

static __always_inline int read_user(__u64 *v, __u64 addr)
{
	return bpf_probe_read_user(v, sizeof(*v), (const void *)addr);
}

/* One frame by frame pointer: 0, or 1 where the chain ends. */
static __always_inline long fp_step(struct walk *w)
{
	__u64 ra, next_fp;

	if (!w->fp || read_user(&ra, w->fp + 8) || read_user(&next_fp, w->fp))
		return 1;
	w->sp = w->fp + 16;
	w->fp = next_fp;
	w->ip = ra;
	w->exact = 0;
	return 0;
}

static __always_inline long signal_step(struct walk *w)
{
	__u64 ip, sp, fp;

	if (read_user(&ip, w->sp + MR_UCONTEXT_IP) || read_user(&sp, w->sp + MR_UCONTEXT_SP) ||
	    read_user(&fp, w->sp + MR_UCONTEXT_FP))
		return 1;
	w->ip = ip;
	w->sp = sp;
	w->fp = fp;
	w->exact = 1;
	return 0;
}

/* One frame by row r: 0, or 1 where the stack ends. */
static __always_inline long row_step(struct walk *w, const struct mr_unwind_row *r)
{
	__u64 cfa, ra, fp;

	switch (r->kind) {
	case MR_UNWIND_CFA_SP:
		cfa = w->sp + r->cfa_offset;
		break;
	case MR_UNWIND_CFA_FP:
		cfa = w->fp + r->cfa_offset;
		break;
	case MR_UNWIND_CFA_PLT:
		cfa = w->sp + r->cfa_offset + ((w->ip & 15) >= 11 ? 8 : 0);
		break;
	case MR_UNWIND_SIGNAL:
		return signal_step(w);
	case MR_UNWIND_END:
		return 1;
	default:
		w->fp_frames++;
		return fp_step(w);
	}
	if (read_user(&ra, cfa - 8))
		return 1;
	if (r->fp_slot) {
		if (read_user(&fp, cfa + (__s64)r->fp_slot * 8))
			return 1;
		w->fp = fp;
	}
	w->sp = cfa;
	w->ip = ra;
	w->exact = 0;
	return 0;
}

/* What every step of one walk uses, looked up once before it. */
struct walk_ctx {
	struct walk *w;
	struct mr_stack_trace *st;
	struct mr_unwind_process *proc;
};

/* Records the current frame and unwinds one; 1 stops the loop. */
static long unwind_frame(__u32 index, void *ctx)
{
	struct walk_ctx *c = ctx;
	struct walk *w = c->w;
	struct mr_stack_trace *st = c->st;
	struct mr_unwind_process *proc = c->proc;
	struct mr_unwind_mapping *m;
	__u32 depth;
	struct mr_unwind_row r = {}; /* a global function's argument: before 6.3 the
				      * verifier rejects uninitialized stack */
	__u64 pc;

	if (!w || !st || !w->ip)
		return 1;
	depth = w->depth;
	if (depth >= MR_MAX_STACK_DEPTH)
		return 1;
	st->ips[depth] = w->ip;
	w->depth = depth + 1;
	pc = w->exact ? w->ip : w->ip - 1;
	m = proc ? mapping_of(proc, pc) : NULL;
	if (proc && !m)
		w->unmapped = 1;
	if (m && m->table >= MR_UNWIND_TABLE_ASKED) {
		w->pending = 1;
		if (m->table == MR_UNWIND_TABLE_PENDING && !w->ask_addr) {
			m->table = MR_UNWIND_TABLE_ASKED;
			w->ask_addr = pc;
		}
	}
	if (!m || !m->table || mr_unwind_row_of(m->table, m->rows, pc - m->bias, &r) != 0) {
		w->fp_frames++;
		return fp_step(w);
	}
	return row_step(w, &r);
}

/* Walks the user stack of the current task into st, with w (this CPU's
 * entry of walks) left saying what the walk met; the depth, 0 when there is
 * none, MR_MAX_STACK_DEPTH when the stack was cut there, -1 when the
 * process has no tables (yet). */
static __always_inline long unwind_user(__s32 pid, struct mr_stack_trace *st, struct walk *w)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs;
	__u32 depth;
	struct walk_ctx c;

	if (task->flags & PF_KTHREAD)
		return 0;
	c.proc = bpf_map_lookup_elem(&unwind_processes, &pid);
	if (!c.proc)
		return -1;
	c.w = w;
	c.st = st;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	w->ip = MR_REGS_IP(regs);
	w->sp = MR_REGS_SP(regs);
	w->fp = MR_REGS_FP(regs);
	w->pid = pid;
	w->depth = 0;
	w->exact = 1;
	w->unmapped = 0;
	w->pending = 0;
	w->fp_frames = 0;
	w->ask_addr = 0;
	bpf_loop(MR_MAX_STACK_DEPTH, unwind_frame, &c, 0);
	depth = w->depth;
	if (depth >= MR_MAX_STACK_DEPTH)
		return MR_MAX_STACK_DEPTH;
	st->ips[depth] = 0;
	return depth;
}

/* Whether the walk w of pid met an address outside its mappings and the
 * runtime was not asked to read them for MAPS_ASK_INTERVAL_NS: then marks
 * it asked. At most one request a second per process, however many
 * samples land in JIT code or anonymous memory. */
#define MAPS_ASK_INTERVAL_NS 1000000000ULL

static __always_inline bool should_ask_maps(__s32 pid, const struct walk *w)
{
	struct mr_unwind_process *proc;
	__u64 now;

	if (!w->unmapped)
		return false;
	proc = bpf_map_lookup_elem(&unwind_processes, &pid);
	now = bpf_ktime_get_ns();
	if (!proc || now - proc->asked_ns < MAPS_ASK_INTERVAL_NS)
		return false;
	proc->asked_ns = now;
	return true;
}

#endif
