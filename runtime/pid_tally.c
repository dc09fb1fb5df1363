/* pid_tally.c - open addressing with linear probing over a power-of-two
 * table; pid 0 marks an empty slot, so pid 0 always counts as overflow. */
#include <stdlib.h>

#include "pid_tally.h"

#define TALLY_SLOTS 1024u

struct tally_slot {
	uint32_t pid;
	uint64_t count;
};

struct mr_pid_tally {
	struct tally_slot slots[TALLY_SLOTS];
	uint64_t overflow;
};

struct mr_pid_tally *mr_pid_tally_new(void)
{
	return calloc(1, sizeof(struct mr_pid_tally));
}

void mr_pid_tally_free(struct mr_pid_tally *t)
{
	free(t);
}

/* The slot holding pid, or the empty slot where it belongs; NULL when full. */
static struct tally_slot *find(const struct mr_pid_tally *t, uint32_t pid)
{
	uint32_t at = (pid * 2654435761u) & (TALLY_SLOTS - 1);

	for (uint32_t i = 0; i < TALLY_SLOTS; i++) {
		const struct tally_slot *s = &t->slots[(at + i) & (TALLY_SLOTS - 1)];

		if (s->pid == pid || s->pid == 0)
			return (struct tally_slot *)s;
	}
	return NULL;
}

void mr_pid_tally_add(struct mr_pid_tally *t, uint32_t pid)
{
	struct tally_slot *s = pid ? find(t, pid) : NULL;

	if (!s) {
		t->overflow++;
		return;
	}
	s->pid = pid;
	s->count++;
}
