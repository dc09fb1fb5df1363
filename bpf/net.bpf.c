// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* net.bpf.c - the network tracer's kernel side: TCP connections and the bytes
 * of their reads and writes, for the data plane's tcp and net_data streams.
 * It captures and never interprets: user space (Lua) parses the protocols.
 *
 * Connections: sock:inet_sock_set_state sees every TCP state change with its
 * socket. CLOSE->SYN_SENT runs in the connecting process (a client, with its
 * pid); SYN_SENT->ESTABLISHED or ->CLOSE ends the connect; SYN_RECV->
 * ESTABLISHED is a connection accepted by a server (in softirq: its process
 * is learnt at its first data); ->LISTEN and LISTEN->CLOSE are listening
 * sockets; any other ->CLOSE ends a connection. tcp:tcp_retransmit_skb counts
 * retransmits. A connection is named by its socket cookie.
 *
 * Data: sock:sock_send_length and sock:sock_recv_length fire in the process
 * for every socket send and receive with the bytes really moved (the
 * syscall's result; errors and MSG_PEEK are not data), whatever the syscall
 * (read, readv, recvfrom, recvmsg, write, writev, sendto, sendmsg, sendfile,
 * splice). They fire only for sockets, so ordinary file I/O costs nothing,
 * unlike per-syscall enter/exit hooks, and need no state between an enter and
 * an exit. The syscall's own arguments (from the task's saved user registers)
 * say where the bytes are: a buffer, an iovec array or a msghdr; the first
 * payload_max bytes are copied (arch.bpf.h knows the syscalls' numbers).
 *
 * Processes: with filter_pids, sched:sched_process_fork adds a traced
 * process's child to the targets map before the child runs, so that its
 * first connections are traced too (user space removes it at its exit).
 *
 * Records are built in a scratch buffer of the CPU and copied into the ring with
 * their true length. Every loss is counted (struct mr_net_counters), each
 * CPU's counters on 64-byte lines of their own. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "arch.bpf.h"
#include "kernel_defs.bpf.h"
#include "map_helpers.bpf.h"
#include "net.h"
#include "pid_filter.bpf.h"

#define MAX_IOV 8
#define COUNT_ONLY_PERIOD_NS 1000000000ULL

/* Ring fill levels above which a record wakes the consumer; below them the
 * data plane's timer drains (see data_plane_bpf.c). */
const volatile __u64 wakeup_data_bytes = 1 << 20;
const volatile __u64 wakeup_event_bytes = 1 << 18;
const volatile __u32 payload_max = MR_NET_PAYLOAD_DEFAULT;

struct mr_net_counter_slot counters[MR_NET_COUNTER_SLOTS];

/* Bumped by user space after each change to the verdicts map: a connection
 * looks its verdict up again only when this moved (see verdict_of). */
volatile __u64 verdict_generation = 1;

struct conn {
	__u64 start_ns;
	__u64 bytes[2];       /* by enum mr_net_direction */
	__u64 reported[2];    /* COUNT verdict: bytes already sent in records */
	__u64 last_report[2]; /* COUNT verdict: when the last record went */
	__s32 pid;            /* 0: an accepted connection before its first data */
	__u32 retransmits;
	__u8 role;
	__u8 verdict; /* enum mr_net_verdict, as of verdict_seen */
	__u8 pad[2];
	char comm[MR_NET_COMM_LEN];
	__u64 verdict_seen; /* the verdict_generation verdict was read at; 0: never */
	__u64 skip_to[2];   /* the capture's skip_to, as of verdict_seen */
};

struct scratch {
	struct mr_net_data hdr;
	__u8 payload[2 * MR_NET_PAYLOAD_MAX]; /* twice: offsets stay provably in bounds */
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} net_data SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);
} tcp_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct conn);
} conns SEC(".maps");

/* Written by user space: connections whose bytes are only counted, or
 * whose next bytes are not to be copied. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct mr_net_capture);
} verdicts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, __s32);
} listeners SEC(".maps");

/* One scratch record per possible CPU, indexed by the CPU it runs on
 * (max_entries set at load), used as a per-CPU array's value would be: a
 * per-CPU array's value is limited to 32 KiB, less than a record of
 * MR_NET_PAYLOAD_MAX. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* This CPU's counters. */
static __always_inline struct mr_net_counters *my_counters(void)
{
	return &counters[bpf_get_smp_processor_id() & (MR_NET_COUNTER_SLOTS - 1)].c;
}

#define COUNT(field) __sync_fetch_and_add(&my_counters()->field, 1)

/* Direct loads: the tracepoints' socket is a BTF pointer (no helper call). */
static __always_inline bool is_tcp(const struct sock *sk)
{
	__u16 family = sk->__sk_common.skc_family;

	return sk->sk_protocol == IPPROTO_TCP && (family == AF_INET || family == AF_INET6);
}

static __always_inline void fill_addresses(struct mr_tcp_event *e, const struct sock *sk)
{
	e->family = BPF_CORE_READ(sk, __sk_common.skc_family);
	e->local_port = BPF_CORE_READ(sk, __sk_common.skc_num);
	e->remote_port = __builtin_bswap16(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (e->family == AF_INET) {
		__u32 local = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		__u32 remote = BPF_CORE_READ(sk, __sk_common.skc_daddr);

		__builtin_memcpy(e->local_addr, &local, sizeof(local));
		__builtin_memcpy(e->remote_addr, &remote, sizeof(remote));
	} else {
		struct in6_addr local = BPF_CORE_READ(sk, __sk_common.skc_v6_rcv_saddr);
		struct in6_addr remote = BPF_CORE_READ(sk, __sk_common.skc_v6_daddr);

		__builtin_memcpy(e->local_addr, &local, sizeof(local));
		__builtin_memcpy(e->remote_addr, &remote, sizeof(remote));
	}
}

/* One connection event; c may be NULL (a listening socket). */
static __always_inline void emit_event(__u32 kind, __u64 cookie, const struct sock *sk, const struct conn *c,
				       __s32 pid, __u64 duration_ns)
{
	struct mr_tcp_event *e = bpf_ringbuf_reserve(&tcp_events, sizeof(*e), 0);

	if (!e) {
		COUNT(lost_events);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->conn = cookie;
	e->kind = kind;
	e->pid = pid;
	e->duration_ns = duration_ns;
	fill_addresses(e, sk);
	if (c) {
		e->role = c->role;
		e->bytes_received = c->bytes[MR_NET_INGRESS];
		e->bytes_sent = c->bytes[MR_NET_EGRESS];
		e->retransmits = c->retransmits;
		__builtin_memcpy(e->comm, c->comm, sizeof(e->comm));
	} else {
		bpf_get_current_comm(e->comm, sizeof(e->comm));
	}
	bpf_ringbuf_submit(e, mr_ring_wakeup(&tcp_events, wakeup_event_bytes));
}

/* A connection the process is in now, with its name. */
static __always_inline struct conn *track(__u64 cookie, __u8 role, __s32 pid)
{
	struct conn c = { .start_ns = bpf_ktime_get_ns(), .pid = pid, .role = role };

	if (pid)
		bpf_get_current_comm(c.comm, sizeof(c.comm));
	if (bpf_map_update_elem(&conns, &cookie, &c, BPF_ANY) != 0) {
		COUNT(conns_full);
		return NULL;
	}
	return bpf_map_lookup_elem(&conns, &cookie);
}

static __always_inline void forget(__u64 cookie)
{
	bpf_map_delete_elem(&conns, &cookie);
	bpf_map_delete_elem(&verdicts, &cookie);
}

static __always_inline void on_connect_end(const struct sock *sk, __u64 cookie, int newstate)
{
	struct conn *c = bpf_map_lookup_elem(&conns, &cookie);
	__u64 now = bpf_ktime_get_ns();

	if (!c)
		return;
	if (newstate == TCP_ESTABLISHED) {
		emit_event(MR_TCP_CONNECT, cookie, sk, c, c->pid, now - c->start_ns);
		c->start_ns = now;
		return;
	}
	emit_event(MR_TCP_CONNECT_FAILED, cookie, sk, c, c->pid, now - c->start_ns);
	forget(cookie);
}

static __always_inline void on_listen(const struct sock *sk, __u64 cookie)
{
	__s32 tgid = bpf_get_current_pid_tgid() >> 32;

	if (!mr_pid_wanted(tgid))
		return;
	bpf_map_update_elem(&listeners, &cookie, &tgid, BPF_ANY);
	emit_event(MR_TCP_LISTEN, cookie, sk, NULL, tgid, 0);
}

static __always_inline void on_close(const struct sock *sk, __u64 cookie, int oldstate)
{
	struct conn *c;
	__s32 *listener;

	if (oldstate == TCP_LISTEN) {
		listener = bpf_map_lookup_elem(&listeners, &cookie);
		if (listener) {
			emit_event(MR_TCP_LISTEN_CLOSE, cookie, sk, NULL, *listener, 0);
			bpf_map_delete_elem(&listeners, &cookie);
		}
		return;
	}
	c = bpf_map_lookup_elem(&conns, &cookie);
	if (!c)
		return;
	emit_event(MR_TCP_CLOSE, cookie, sk, c, c->pid, bpf_ktime_get_ns() - c->start_ns);
	forget(cookie);
}

SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(on_state, const struct sock *sk, const int oldstate, const int newstate)
{
	__s32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 cookie;

	if (!is_tcp(sk))
		return 0;
	cookie = bpf_get_socket_cookie((void *)sk);
	if (newstate == TCP_SYN_SENT) {
		if (mr_pid_wanted(tgid))
			track(cookie, MR_ROLE_CLIENT, tgid);
	} else if (oldstate == TCP_SYN_SENT) {
		on_connect_end(sk, cookie, newstate);
	} else if (oldstate == TCP_SYN_RECV && newstate == TCP_ESTABLISHED) {
		track(cookie, MR_ROLE_SERVER, 0);
	} else if (newstate == TCP_LISTEN) {
		on_listen(sk, cookie);
	} else if (newstate == TCP_CLOSE) {
		on_close(sk, cookie, oldstate);
	}
	return 0;
}

SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(on_retransmit, const struct sock *sk)
{
	__u64 cookie = bpf_get_socket_cookie((void *)sk);
	struct conn *c = bpf_map_lookup_elem(&conns, &cookie);

	if (!c)
		return 0;
	__sync_fetch_and_add(&c->retransmits, 1);
	emit_event(MR_TCP_RETRANSMIT, cookie, sk, c, c->pid, 0);
	return 0;
}

/* The connection of the running process's socket I/O: an accepted one gets
 * its process now; one open before it was first seen is tracked from now. */
static __always_inline struct conn *data_conn(struct sock *sk, __u64 cookie, __s32 tgid)
{
	struct conn *c = bpf_map_lookup_elem(&conns, &cookie);

	if (c && c->pid)
		return c;
	/* A socket already closed (its peer's reset handled while this send
	 * ran) is never tracked again: its close event has gone (or is on its
	 * way, from another CPU), so its entry would stay for ever, and its
	 * local port is already let go. */
	if (sk->__sk_common.skc_state == TCP_CLOSE) {
		COUNT(closed_data);
		return NULL;
	}
	if (c) {
		c->pid = tgid;
		bpf_get_current_comm(c->comm, sizeof(c->comm));
		emit_event(MR_TCP_ACCEPT, cookie, sk, c, tgid, 0);
		return c;
	}
	c = track(cookie, MR_ROLE_UNKNOWN, tgid);
	if (c) {
		COUNT(found_midstream);
		emit_event(MR_TCP_FOUND, cookie, sk, c, tgid, 0);
	}
	return c;
}

/* v masked in a way the compiler cannot drop (its own range checks are
 * done on other registers): the verifier must see the bound on the very
 * register used for the access. */
#define BOUND(v, mask) asm volatile("%0 &= %1" : "+r"(v) : "i"(mask))

static __always_inline __u64 payload_offset(__u64 at)
{
	BOUND(at, MR_NET_PAYLOAD_MAX - 1);
	return at;
}

/* Copies up to want bytes from user memory at src to payload[at]; returns
 * the bytes copied (0 on a fault). */
static __always_inline __u32 copy_user(struct scratch *s, __u32 at, const void *src, __u64 want)
{
	if (at >= MR_NET_PAYLOAD_MAX || want == 0)
		return 0;
	BOUND(want, 2 * MR_NET_PAYLOAD_MAX - 1); /* the clamp below then holds on this register */
	if (want > MR_NET_PAYLOAD_MAX)
		want = MR_NET_PAYLOAD_MAX;
	if (bpf_probe_read_user(&s->payload[payload_offset(at)], want, src) != 0)
		return 0;
	return want;
}

/* Copies up to want bytes from an iovec array, in order, after its first
 * skip bytes. */
static __always_inline __u32 copy_iov(struct scratch *s, const struct iovec *iov, __u64 count, __u64 skip,
				      __u32 want)
{
	struct iovec v;
	__u32 done = 0;

	for (int i = 0; i < MAX_IOV; i++) {
		__u64 n;

		if (i >= count || done >= want)
			break;
		if (bpf_probe_read_user(&v, sizeof(v), &iov[i]) != 0)
			break;
		if (v.iov_len <= skip) {
			skip -= v.iov_len;
			continue;
		}
		n = v.iov_len - skip < want - done ? v.iov_len - skip : want - done;
		if (copy_user(s, done, (const char *)v.iov_base + skip, n) != n)
			break;
		skip = 0;
		done += n;
	}
	return done;
}

/* Copies want bytes the current syscall moved, after its first skip ones,
 * found through its arguments in the task's saved user registers.
 * *buffered: whether the syscall has a user buffer at all (sendfile and
 * splice have none). */
static __always_inline __u32 copy_payload(struct scratch *s, __u64 skip, __u32 want, bool *buffered)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	long nr = MR_SYSCALL_NR(regs);
	void *arg = (void *)MR_SYSCALL_ARG2(regs);
	struct user_msghdr msg;

	*buffered = true;
	switch (nr) {
	case MR_NR_READ:
	case MR_NR_WRITE:
	case MR_NR_RECVFROM:
	case MR_NR_SENDTO:
		return copy_user(s, 0, (const char *)arg + skip, want);
	case MR_NR_READV:
	case MR_NR_WRITEV:
		return copy_iov(s, arg, MR_SYSCALL_ARG3(regs), skip, want);
	case MR_NR_RECVMSG:
	case MR_NR_SENDMSG:
		if (bpf_probe_read_user(&msg, sizeof(msg), arg) != 0)
			return 0;
		return copy_iov(s, msg.msg_iov, msg.msg_iovlen, skip, want);
	}
	*buffered = false;
	return 0;
}

static __always_inline void send_record(struct scratch *s, __u32 copied)
{
	__u64 size = copied;

	if (copied > MR_NET_PAYLOAD_MAX)
		return;
	BOUND(size, 2 * MR_NET_PAYLOAD_MAX - 1); /* no change: copied <= MR_NET_PAYLOAD_MAX */
	if (bpf_ringbuf_output(&net_data, s, sizeof(s->hdr) + size,
			       mr_ring_wakeup(&net_data, wakeup_data_bytes)) != 0) {
		COUNT(lost_data);
		return;
	}
	COUNT(data_records);
}

static __always_inline void fill_header(struct scratch *s, __u64 cookie, const struct conn *c, __u8 dir,
					__u64 id, __u64 now)
{
	s->hdr.ts_ns = now;
	s->hdr.conn = cookie;
	s->hdr.pid = id >> 32;
	s->hdr.tid = (__u32)id;
	s->hdr.direction = dir;
	s->hdr.role = c->role;
	s->hdr.pad = 0;
	s->hdr.skipped = 0;
}

/* COUNT verdict: a record of the bytes moved since the last one, at most
 * every COUNT_ONLY_PERIOD_NS per direction. */
static __always_inline void count_only(struct scratch *s, struct conn *c, __u8 dir, __u64 now)
{
	__u64 total = c->bytes[dir & 1], reported = c->reported[dir & 1];

	if (now - c->last_report[dir & 1] < COUNT_ONLY_PERIOD_NS)
		return;
	c->last_report[dir & 1] = now;
	c->reported[dir & 1] = total;
	s->hdr.offset = reported;
	s->hdr.len = total - reported;
	s->hdr.copied = 0;
	s->hdr.flags = MR_NET_COUNT_ONLY | MR_NET_NO_PAYLOAD;
	send_record(s, 0);
}

/* The connection's verdict: the verdicts map is read again only when user
 * space changed a verdict since this connection last read it, which saves a
 * hash lookup on nearly every record. */
static __always_inline __u8 verdict_of(struct conn *c, __u64 cookie)
{
	__u64 generation = verdict_generation;
	struct mr_net_capture *v;

	if (c->verdict_seen == generation)
		return c->verdict;
	v = bpf_map_lookup_elem(&verdicts, &cookie);
	c->verdict = v ? v->verdict : MR_NET_CAPTURE;
	c->skip_to[0] = v ? v->skip_to[0] : 0;
	c->skip_to[1] = v ? v->skip_to[1] : 0;
	c->verdict_seen = generation;
	return c->verdict;
}

/* Bytes of this record, which starts at offset, that come before the
 * capture's skip_to; ~0 when the whole record does, which is then not
 * recorded at all (a record ending at skip_to is: its time ends a body). */
static __always_inline __u64 to_skip(const struct conn *c, __u8 dir, __u64 offset, int ret)
{
	__u64 skip_to = c->skip_to[dir & 1];

	if (skip_to <= offset)
		return 0;
	return offset + (__u64)ret < skip_to ? ~0ULL : skip_to - offset;
}

/* The checks go cheapest and most selective first: every socket read and
 * write of the machine (the traced server's clients too) runs this. */
static __always_inline void on_data(struct sock *sk, int ret, __u8 dir)
{
	__u64 id = bpf_get_current_pid_tgid(), now, cookie, offset, skip;
	__u32 cpu = bpf_get_smp_processor_id(), want, copied, rest;
	bool buffered;
	struct scratch *s;
	struct conn *c;

	if (ret <= 0 || !mr_pid_wanted(id >> 32) || (bpf_get_current_task_btf()->flags & PF_KTHREAD) ||
	    !is_tcp(sk))
		return;
	now = bpf_ktime_get_ns();
	cookie = bpf_get_socket_cookie(sk);
	c = data_conn(sk, cookie, id >> 32);
	s = bpf_map_lookup_elem(&scratch, &cpu);
	if (!c || !s)
		return;
	offset = __sync_fetch_and_add(&c->bytes[dir & 1], (__u64)ret);
	fill_header(s, cookie, c, dir, id, now);
	if (verdict_of(c, cookie) == MR_NET_COUNT) {
		count_only(s, c, dir, now);
		return;
	}
	skip = to_skip(c, dir, offset, ret);
	if (skip == ~0ULL) {
		COUNT(skipped_records);
		__sync_fetch_and_add(&my_counters()->skipped_bytes, (__u64)ret);
		return;
	}
	if (skip)
		__sync_fetch_and_add(&my_counters()->skipped_bytes, skip);
	rest = (__u32)ret - (__u32)skip;
	want = rest < payload_max ? rest : payload_max;
	copied = copy_payload(s, skip, want, &buffered);
	s->hdr.offset = offset;
	s->hdr.len = ret;
	s->hdr.copied = copied;
	s->hdr.skipped = (__u32)skip;
	s->hdr.flags = copied == 0 ? MR_NET_NO_PAYLOAD : (copied < rest ? MR_NET_TRUNCATED : 0);
	if (buffered && copied == 0 && want)
		COUNT(unreadable);
	else if (copied < rest)
		COUNT(truncated); /* at the limit, or past MAX_IOV buffers */
	send_record(s, copied);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(on_send, struct sock *sk, int ret, int flags)
{
	on_data(sk, ret, MR_NET_EGRESS);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(on_recv, struct sock *sk, int ret, int flags)
{
	if (!(flags & MSG_PEEK))
		on_data(sk, ret, MR_NET_INGRESS);
	return 0;
}

/* A new process (not a thread) of a traced one is traced from its start.
 * Loaded only with filter_pids (data_plane_bpf.c). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__s32 ptgid = BPF_CORE_READ(parent, tgid);
	__s32 tgid = BPF_CORE_READ(child, tgid);
	__u8 one = 1;

	if (BPF_CORE_READ(child, pid) != tgid || !bpf_map_lookup_elem(&targets, &ptgid))
		return 0;
	if (bpf_map_update_elem(&targets, &tgid, &one, BPF_ANY) != 0)
		COUNT(targets_full);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
