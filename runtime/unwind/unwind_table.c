/* unwind_table.c - builds a file's compact unwind table with libdw: from each
 * FDE start (.eh_frame_hdr, and .debug_frame where the file has one) it asks
 * dwarf_cfi_addrframe for the row at an address, records its rules, and
 * moves to the end of the row's range, until the FDE ends; equal neighbours
 * are merged. Where both sections describe the same code, .eh_frame's rules
 * are used (the code's own unwind tables). libdw does the DWARF
 * interpretation (CIE/FDE parsing, augmentations, DW_CFA_remember_state...),
 * which is where hand-written unwinders get things wrong. */
#include "unwind/unwind_table.h"

#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow_array.h"
#include "unwind/unwind_debug_frame.h"
#include "unwind/unwind_fde_index.h"
#include "unwind/unwind_rule.h"

struct build {
	struct mr_unwind_table *t;
	uint64_t pc; /* where the next row starts */
};

/* Where an FDE starts, and the section whose rules describe it. */
struct fde {
	uint64_t start;
	Dwarf_CFI *cfi;
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

/* Rows from b->pc until the FDE holding it (in cfi) ends or limit is reached. */
static int walk_fde(struct build *b, Dwarf_CFI *cfi, uint64_t limit)
{
	Dwarf_Frame *frame;
	Dwarf_Addr start, end;
	struct mr_unwind_row r;
	bool signal_frame;
	int rc = 0;

	while (rc == 0 && b->pc < limit && dwarf_cfi_addrframe(cfi, b->pc, &frame) == 0) {
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

static int walk(struct build *b, const struct fde *fdes, size_t n)
{
	int rc = 0;

	b->t->stats.fdes = n;
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (fdes[i].start < b->pc)
			continue; /* overlaps the one before: already covered */
		if (b->pc && fdes[i].start > b->pc)
			rc = push_fallback(b); /* no CFI between the two */
		b->pc = fdes[i].start;
		rc = rc ?: walk_fde(b, fdes[i].cfi, i + 1 < n ? fdes[i + 1].start : UINT64_MAX);
	}
	return rc ?: push_fallback(b);
}

/* The FDEs of both sections in one ascending list, .eh_frame's first at
 * equal starts; NULL when out of memory. */
static struct fde *merge(const uint64_t *eh, size_t neh, Dwarf_CFI *eh_cfi,
			 const struct mr_unwind_debug_frame *df, size_t *n)
{
	struct fde *out = malloc((neh + df->n + 1) * sizeof(*out));
	size_t i = 0, j = 0, k = 0;

	if (!out)
		return NULL;
	while (i < neh || j < df->n) {
		if (j == df->n || (i < neh && eh[i] <= df->starts[j]))
			out[k++] = (struct fde){ eh[i++], eh_cfi };
		else
			out[k++] = (struct fde){ df->starts[j++], df->cfi };
	}
	*n = k;
	return out;
}

/* Walks the merged FDEs of both sections into b. */
static int walk_sections(struct build *b, const uint64_t *eh, size_t neh, Dwarf_CFI *eh_cfi,
			 const struct mr_unwind_debug_frame *df)
{
	size_t n;
	struct fde *fdes = merge(eh, eh_cfi ? neh : 0, eh_cfi, df, &n);
	int rc;

	if (!fdes)
		return -ENOMEM;
	rc = n ? walk(b, fdes, n) : -ENOENT;
	free(fdes);
	return rc;
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
	struct mr_unwind_debug_frame df;
	uint64_t *starts;
	size_t n;
	Dwarf_CFI *eh_cfi;
	int rc = mr_unwind_fde_starts(e, &starts, &n), rc_debug;

	if (rc != 0 && rc != -ENOENT)
		return rc;
	rc_debug = mr_unwind_debug_frame_open(e, &df);
	if (rc_debug != 0 && rc_debug != -ENOENT) {
		free(starts);
		return rc_debug;
	}
	eh_cfi = rc == 0 ? dwarf_getcfi_elf(e) : NULL;
	b.t = calloc(1, sizeof(*b.t));
	rc = !b.t ? -ENOMEM : walk_sections(&b, starts, n, eh_cfi, &df);
	free(starts);
	if (eh_cfi)
		dwarf_cfi_end(eh_cfi);
	mr_unwind_debug_frame_close(&df);
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
