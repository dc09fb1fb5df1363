/* unwind_rule.c - libdw's DWARF expressions for the CFA and the saved
 * registers of one row, matched against the shapes compilers emit on x86-64
 * (see unwind_rule.h). Anything else is a fallback to frame pointers. */
#include "unwind/unwind_rule.h"

#include <dwarf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#define REG_FP 6
#define REG_SP 7
#define REG_RA 16
#define RA_OFFSET (-8)
/* glibc's __restore_rt: CFA = *(SP + offsetof(ucontext, uc_mcontext.rsp)). */
#define SIGNAL_CFA_OFFSET 160

/* The register and offset of a DW_OP_bregN / DW_OP_bregx operation. */
static int breg(const Dwarf_Op *op, int *reg, int64_t *off)
{
	if (op->atom == DW_OP_bregx) {
		*reg = (int)op->number;
		*off = (int64_t)op->number2;
		return 0;
	}
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		*reg = op->atom - DW_OP_breg0;
		*off = (int64_t)op->number;
		return 0;
	}
	return -ENOTSUP;
}

static int fits(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
}

/* gcc's PLT expression: SP + off + ((pc & 15) >= 11 ? 8 : 0). */
static int is_plt(const Dwarf_Op *ops, size_t n)
{
	static const uint8_t shape[] = { DW_OP_breg16, DW_OP_lit15, DW_OP_and, DW_OP_lit11,
					 DW_OP_ge,     DW_OP_lit3,  DW_OP_shl, DW_OP_plus };

	if (n != 1 + sizeof(shape) || ops[1].number != 0)
		return 0;
	for (size_t i = 0; i < sizeof(shape); i++)
		if (ops[i + 1].atom != shape[i])
			return 0;
	return 1;
}

static int cfa_rule(Dwarf_Frame *frame, bool signal_frame, struct mr_unwind_row *row)
{
	Dwarf_Op *ops;
	size_t n;
	int reg;
	int64_t off;

	if (dwarf_frame_cfa(frame, &ops, &n) != 0 || n == 0 || breg(&ops[0], &reg, &off) != 0 || !fits(off))
		return -ENOTSUP;
	row->cfa_offset = (__s16)off;
	if (n == 1 && (reg == REG_SP || reg == REG_FP)) {
		row->kind = reg == REG_SP ? MR_UNWIND_CFA_SP : MR_UNWIND_CFA_FP;
		return 0;
	}
	if (reg != REG_SP)
		return -ENOTSUP;
	if (n == 2 && signal_frame && ops[1].atom == DW_OP_deref && off == SIGNAL_CFA_OFFSET) {
		row->kind = MR_UNWIND_SIGNAL;
		return 0;
	}
	if (is_plt(ops, n)) {
		row->kind = MR_UNWIND_CFA_PLT;
		return 0;
	}
	return -ENOTSUP;
}

/* The offset from the CFA at which reg is saved: 0 when it is, 1 when it
 * is unchanged ("same value"), 2 when undefined, -ENOTSUP otherwise. */
static int saved_at(Dwarf_Frame *frame, int reg, int64_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t n;

	if (dwarf_frame_register(frame, reg, mem, &ops, &n) != 0)
		return -ENOTSUP;
	if (n == 0)
		return ops ? 2 : 1;
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return -ENOTSUP;
	*off = 0;
	if (n == 1)
		return 0;
	if (n == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*off = (int64_t)ops[1].number;
		return 0;
	}
	return -ENOTSUP;
}

static int fallback(struct mr_unwind_row *row)
{
	row->kind = MR_UNWIND_FALLBACK;
	row->cfa_offset = 0;
	row->fp_slot = 0;
	return -ENOTSUP;
}

/* A save slot in 8-byte units below or above the CFA, never at it. */
static int slot_of(int64_t off)
{
	return off != 0 && off % 8 == 0 && off / 8 >= INT8_MIN && off / 8 <= INT8_MAX;
}

int mr_unwind_rule_of(Dwarf_Frame *frame, bool signal_frame, struct mr_unwind_row *row)
{
	int64_t off = 0;
	int rc;

	row->fp_slot = 0;
	if (cfa_rule(frame, signal_frame, row) != 0)
		return fallback(row);
	if (row->kind == MR_UNWIND_SIGNAL)
		return 0; /* every register comes from the ucontext */
	rc = saved_at(frame, REG_RA, &off);
	if (rc == 2) {
		row->kind = MR_UNWIND_END;
		return 0;
	}
	if (rc != 0 || off != RA_OFFSET)
		return fallback(row);
	rc = saved_at(frame, REG_FP, &off);
	if (rc == 0 && slot_of(off)) {
		row->fp_slot = (__s8)(off / 8);
		return 0;
	}
	return rc > 0 ? 0 : fallback(row);
}
