/* pid_names.c - an open-addressing table pid -> process name (16 bytes, as
 * the kernel's comm), grown by doubling. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pid_names.h"

#define NAME_LEN 16

struct slot {
	uint32_t pid; /* 0: empty (pid 0 is never profiled) */
	char name[NAME_LEN];
};

struct mr_pid_names {
	struct slot *slots;
	size_t cap; /* power of two */
	size_t used;
};

struct mr_pid_names *mr_pid_names_new(void)
{
	struct mr_pid_names *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cap = 256;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	if (!t->slots) {
		free(t);
		return NULL;
	}
	return t;
}

void mr_pid_names_free(struct mr_pid_names *t)
{
	if (!t)
		return;
	free(t->slots);
	free(t);
}

static struct slot *find(struct slot *slots, size_t cap, uint32_t pid)
{
	size_t i = (pid * 2654435761u) & (cap - 1);

	while (slots[i].pid && slots[i].pid != pid)
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

static int grow(struct mr_pid_names *t)
{
	size_t cap = t->cap * 2;
	struct slot *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].pid)
			*find(slots, cap, t->slots[i].pid) = t->slots[i];
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

int mr_pid_names_set(struct mr_pid_names *t, uint32_t pid, const char *comm)
{
	struct slot *s;
	int is_new;

	if (!pid)
		return -EINVAL;
	if ((t->used + 1) * 2 > t->cap && grow(t) != 0)
		return -ENOMEM;
	s = find(t->slots, t->cap, pid);
	is_new = s->pid == 0;
	s->pid = pid;
	strncpy(s->name, comm, NAME_LEN - 1);
	s->name[NAME_LEN - 1] = '\0';
	t->used += is_new;
	return is_new;
}

const char *mr_pid_names_get(const struct mr_pid_names *t, uint32_t pid)
{
	const struct slot *s;

	if (!pid)
		return NULL;
	s = find(t->slots, t->cap, pid);
	return s->pid ? s->name : NULL;
}

size_t mr_pid_names_count(const struct mr_pid_names *t)
{
	return t->used;
}
