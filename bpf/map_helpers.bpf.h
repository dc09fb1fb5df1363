/* map_helpers.bpf.h - the map idioms the BPF programs share: inserting into
 * an allocate-on-demand hash map with a preallocated spill map for when the
 * kernel has no memory, and the ring buffers' wakeup policy. */
#ifndef MR_BPF_MAP_HELPERS_H
#define MR_BPF_MAP_HELPERS_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "kernel_defs.bpf.h"

/* Inserts key with value into map, or into spill when map has no memory
 * for it: 0 when key is in one of them now (inserted, or there already),
 * else the negative errno (-E2BIG: full). */
static __always_inline long mr_map_insert_spill(void *map, void *spill, const void *key, const void *value)
{
	long err = bpf_map_update_elem(map, key, value, BPF_NOEXIST);

	if (err == -ENOMEM)
		err = bpf_map_update_elem(spill, key, value, BPF_NOEXIST);
	return err == -EEXIST ? 0 : err;
}

/* The value of key in map or spill, inserted from init when it is in
 * neither; NULL when it cannot be, *err saying why (0: a concurrent delete
 * took it between the insert and the lookup). */
static __always_inline void *mr_map_lookup_or_insert(void *map, void *spill, const void *key,
						     const void *init, long *err)
{
	void *v = bpf_map_lookup_elem(map, key);

	*err = 0;
	if (!v)
		v = bpf_map_lookup_elem(spill, key);
	if (v)
		return v;
	*err = mr_map_insert_spill(map, spill, key, init);
	if (*err)
		return NULL;
	v = bpf_map_lookup_elem(map, key);
	return v ? v : bpf_map_lookup_elem(spill, key);
}

/* The flag a ring buffer submit takes: wake the consumer once more than
 * level bytes wait, else leave it to the consumer's timer. */
static __always_inline __u64 mr_ring_wakeup(void *ring, __u64 level)
{
	return bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) > level ? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

#endif
