/* unwind_fde_index.h - where each function's CFI starts: the sorted search
 * table of .eh_frame_hdr (PT_GNU_EH_FRAME), which the linker writes for
 * every binary with .eh_frame. The table builder walks from one start to
 * the next, so that it knows where code without CFI lies between them. */
#ifndef MR_UNWIND_UNWIND_FDE_INDEX_H
#define MR_UNWIND_UNWIND_FDE_INDEX_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/* The start addresses of the FDEs of e, ascending, in a malloc'd array.
 * 0, -ENOENT when e has no .eh_frame_hdr, -ENOTSUP for a table encoding
 * other than the one linkers write (datarel sdata4), -ENOMEM. */
int mr_unwind_fde_starts(Elf *e, uint64_t **starts, size_t *n);

#endif
