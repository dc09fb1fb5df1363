/* unwind_table.c - builds a file's compact unwind table with libdw: from each
 * FDE start (.eh_frame_hdr) it asks dwarf_cfi_addrframe for the row at an
 * address, records its rules, and moves to the end of the row's range, until
 * the FDE ends; equal neighbours are merged. libdw does the DWARF
 * interpretation (CIE/FDE parsing, augmentations, DW_CFA_remember_state...),
 * which is where hand-written unwinders get things wrong. */
#include "unwind/unwind_table.h"

#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "unwind/unwind_fde_index.h"
#include "unwind/unwind_rule.h"

struct build {
	struct mr_unwind_table *t;
	Dwarf_CFI *cfi;
	uint64_t pc; /* where the next row starts */
};

static int same_rules(const struct mr_unwind_row *a, const struct mr_unwind_row *b)
{
	return a->kind == b->kind && a->cfa_offset == b->cfa_offset && a->fp_slot == b->fp_slot;
}

static int push(struct mr_unwind_table *t, uint64_t pc, const struct mr_unwind_row *rules)
{
	struct mr_unwind_row *grown;

	if (pc > UINT32_MAX)
		return -ERANGE;
	if (t->n && same_rules(&t->rows[t->n - 1], rules))
		return 0;
	if (t->n && t->rows[t->n - 1].pc == pc) {
		t->rows[t->n - 1] = *rules; /* an empty range: the later rules win */
		t->rows[t->n - 1].pc = (__u32)pc;
		return 0;
	}
	grown = mr_grow_array(t->rows, &t->cap, t->n + 1, sizeof(*t->rows));
	if (!grown)
		return -ENOMEM;
	t->rows = grown;
	t->rows[t->n] = *rules;
	t->rows[t->n++].pc = (__u32)pc;
	return 0;
}

static int push_fallback(struct build *b)
{
	struct mr_unwind_row r = { .kind = MR_UNWIND_FALLBACK };

	return push(b->t, b->pc, &r);
}

/* Rows from b->pc until the FDE holding it ends or limit is reached. */
static int walk_fde(struct build *b, uint64_t limit)
{
	Dwarf_Frame *frame;
	Dwarf_Addr start, end;
	struct mr_unwind_row r;
	bool signal_frame;
	int rc = 0;

	while (rc == 0 && b->pc < limit && dwarf_cfi_addrframe(b->cfi, b->pc, &frame) == 0) {
		if (dwarf_frame_info(frame, &start, &end, &signal_frame) < 0 || end <= b->pc) {
			free(frame);
			break;
		}
		if (mr_unwind_rule_of(frame, signal_frame, &r) != 0)
			b->t->stats.unsupported++;
		free(frame);
		rc = push(b->t, b->pc, &r);
		b->pc = end;
	}
	return rc;
}

static int walk(struct build *b, const uint64_t *starts, size_t n)
{
	int rc = 0;

	b->t->stats.fdes = n;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (starts[i] < b->pc)
			continue; /* overlaps the one before: already covered */
		if (b->pc && starts[i] > b->pc)
			rc = push_fallback(b); /* no CFI between the two */
		b->pc = starts[i];
		rc = rc ?: walk_fde(b, i + 1 < n ? starts[i + 1] : UINT64_MAX);
	}
	return rc ?: push_fallback(b);
}

static void finish_stats(struct mr_unwind_table *t)
{
	t->stats.rows = t->n;
	t->stats.bytes = t->n * sizeof(*t->rows);
	for (size_t i = 0; i < t->n; i++)
		t->stats.fallback_rows += t->rows[i].kind == MR_UNWIND_FALLBACK;
}

int mr_unwind_table_build(Elf *e, struct mr_unwind_table **out)
{
	struct build b = { 0 };
	uint64_t *starts;
	size_t n;
	int rc = mr_unwind_fde_starts(e, &starts, &n);

	if (rc != 0)
		return rc;
	b.cfi = dwarf_getcfi_elf(e);
	b.t = calloc(1, sizeof(*b.t));
	rc = !b.cfi ? -ENOENT : !b.t ? -ENOMEM : walk(&b, starts, n);
	free(starts);
	if (b.cfi)
		dwarf_cfi_end(b.cfi);
	if (rc != 0) {
		mr_unwind_table_free(b.t);
		return rc;
	}
	finish_stats(b.t);
	*out = b.t;
	return 0;
}

const struct mr_unwind_row *mr_unwind_table_row(const struct mr_unwind_table *t, uint64_t vaddr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &t->rows[lo - 1] : NULL;
}

void mr_unwind_table_free(mr_unwind_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}
