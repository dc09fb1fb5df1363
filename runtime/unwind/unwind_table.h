/* unwind_table.h - the compact unwind table of one ELF file: its .eh_frame
 * (and .debug_frame) turned into sorted rows (bpf/unwind.h), each covering the addresses from
 * its pc to the next row's. Code between functions with CFI, and rules the
 * compact form cannot hold, get MR_UNWIND_FALLBACK rows (frame pointers). */
#ifndef MR_UNWIND_UNWIND_TABLE_H
#define MR_UNWIND_UNWIND_TABLE_H

#include <gelf.h>
#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "api_test.h"
#include "unwind.h"

struct mr_unwind_table {
	struct mr_unwind_row *rows;
	size_t n, cap;
	struct mr_unwind_table_stats stats;
};

/* Builds the table of e from its .eh_frame (found through .eh_frame_hdr)
 * and its .debug_frame. 0, -ENOENT when it has neither, -ENOTSUP, -ERANGE
 * for addresses past 4 GiB, -ENOMEM. */
int mr_unwind_table_build(Elf *e, struct mr_unwind_table **out);
/* The row covering vaddr, or NULL when vaddr is before the first. */
const struct mr_unwind_row *mr_unwind_table_row(const struct mr_unwind_table *t, uint64_t vaddr);

#endif
