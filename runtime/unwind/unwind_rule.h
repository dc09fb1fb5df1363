/* unwind_rule.h - one CFI row as libdw computes it (dwarf_cfi_addrframe)
 * turned into the compact form the BPF walker reads: CFA from SP or FP plus
 * an offset, the return address at CFA - 8, FP unchanged or saved at CFA +
 * offset; the PLT and signal-trampoline expressions are recognised. */
#ifndef MR_UNWIND_UNWIND_RULE_H
#define MR_UNWIND_UNWIND_RULE_H

#include <elfutils/libdw.h>
#include <linux/types.h>
#include <stdbool.h>

#include "unwind.h"

/* Fills row's rules (not its pc) from frame. 0, or -ENOTSUP when the rules
 * are beyond the compact form (row is then a MR_UNWIND_FALLBACK row). */
int mr_unwind_rule_of(Dwarf_Frame *frame, bool signal_frame, struct mr_unwind_row *row);

#endif
