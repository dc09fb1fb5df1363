/* unwind_debug_frame.h - the FDEs of a file's .debug_frame: the CFI compilers
 * write with the debug information when they write no unwind tables
 * (-fno-asynchronous-unwind-tables, and some Go and Rust builds). Such a
 * file's .eh_frame holds only the C runtime's start files, so the table
 * builder (unwind_table.c) takes functions from both sections. */
#ifndef MR_UNWIND_UNWIND_DEBUG_FRAME_H
#define MR_UNWIND_UNWIND_DEBUG_FRAME_H

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

struct mr_unwind_debug_frame {
	Dwarf *dw;        /* owns cfi */
	Dwarf_CFI *cfi;   /* the rules, read through libdw */
	uint64_t *starts; /* the FDEs' first addresses, ascending (malloc'd) */
	size_t n;
};

/* Opens e's .debug_frame into df. 0; -ENOENT when e has none (or libdw
 * cannot read it), -ENOTSUP for a compressed one that cannot be expanded,
 * -ENOMEM. */
int mr_unwind_debug_frame_open(Elf *e, struct mr_unwind_debug_frame *df);
void mr_unwind_debug_frame_close(struct mr_unwind_debug_frame *df);

#endif
