/* unwind.h - the compact unwind tables shared by the runtime, which builds
 * them from .eh_frame, and profiler.bpf.c, which walks user stacks with
 * them. A file's table is a sorted array of rows, one per address range with
 * the same rules; a process is a sorted array of its executable mappings,
 * each naming the table of its file. x86-64 only: the return address is
 * always at CFA - 8. */
#ifndef MR_BPF_UNWIND_H
#define MR_BPF_UNWIND_H

/* How the canonical frame address (the caller's stack pointer) is found,
 * and what the row means. */
enum mr_unwind_kind {
	MR_UNWIND_CFA_SP = 1, /* CFA = SP + cfa_offset */
	MR_UNWIND_CFA_FP = 2, /* CFA = FP + cfa_offset */
	/* A PLT stub: CFA = SP + cfa_offset, 8 more past byte 11 of its 16. */
	MR_UNWIND_CFA_PLT = 3,
	/* A signal trampoline: the interrupted registers are in the ucontext
	 * at SP, and the caller's pc is exact, not a return address. */
	MR_UNWIND_SIGNAL = 4,
	MR_UNWIND_END = 5,      /* the outermost frame: the stack ends here */
	MR_UNWIND_FALLBACK = 6, /* no usable rule here: walk by frame pointer */
};

/* 8 bytes, the size of a kernel array element (rounded up to 8). */
struct mr_unwind_row {
	__u32 pc; /* first address, in the file's virtual addresses */
	__s16 cfa_offset;
	__u8 kind; /* enum mr_unwind_kind */
	/* The caller's frame pointer is saved at CFA + 8 * fp_slot; 0: the
	 * frame pointer is unchanged (CFA + 0 is never a save slot). */
	__s8 fp_slot;
};

/* One executable mapping of a process: pc - bias is the address in its
 * file; table 0 means none (walk by frame pointer). */
/* Its file has a table not built yet: the walker asks for it (once). */
#define MR_UNWIND_TABLE_PENDING 0xffffffffu
#define MR_UNWIND_TABLE_ASKED 0xfffffffeu
struct mr_unwind_mapping {
	__u64 start;
	__u64 end;
	__u64 bias;
	__u32 table;
	__u32 rows;
};

#define MR_UNWIND_MAX_MAPPINGS 256

/* The walker's binary search over a table's rows takes this many halvings,
 * so a table holds at most MR_UNWIND_MAX_ROWS rows (the runtime loads none
 * larger: its file is walked by frame pointer, counted as not loaded). */
#define MR_UNWIND_ROW_SEARCH_STEPS 22
#define MR_UNWIND_MAX_ROWS ((1u << MR_UNWIND_ROW_SEARCH_STEPS) - 1)

struct mr_unwind_process {
	__u32 n;
	__u32 pad;
	/* Set by the walker when it last asked the runtime to read the
	 * process's mappings again (an address outside all of them: a library
	 * loaded later, or one not loaded yet when they were read). */
	__u64 asked_ns;
	struct mr_unwind_mapping m[MR_UNWIND_MAX_MAPPINGS];
};

#endif
