/* net.h - the records of the network streams, shared by net.bpf.c, the
 * runtime and Lua (through the preprocessed runtime/api.h): TCP connection
 * events (fixed size) and the data of socket reads and writes (a header
 * followed by a copy of the first bytes moved). Times are CLOCK_MONOTONIC
 * nanoseconds; a connection is named by its socket's cookie, which the
 * kernel never reuses. */
#ifndef MR_BPF_NET_H
#define MR_BPF_NET_H

#define MR_NET_COMM_LEN 16           /* the kernel's TASK_COMM_LEN */
#define MR_NET_PAYLOAD_MAX 65536     /* the largest copy of one syscall's data (a power of two) */
#define MR_NET_PAYLOAD_DEFAULT 32768 /* the copy when nothing else is asked: 100 pipelined responses */

enum mr_tcp_event_kind {
	MR_TCP_CONNECT = 1,        /* connect() completed: duration_ns from SYN sent to established */
	MR_TCP_CONNECT_FAILED = 2, /* connect() failed: duration_ns until it did */
	MR_TCP_ACCEPT = 3,         /* a connection accepted by a server, at its first data */
	MR_TCP_FOUND = 4,          /* a connection already open when first seen (role unknown) */
	MR_TCP_CLOSE = 5,          /* a connection closed: its byte and retransmit totals */
	MR_TCP_RETRANSMIT = 6,     /* a segment of a known connection was sent again */
	MR_TCP_LISTEN = 7,         /* a socket started listening (local address only) */
	MR_TCP_LISTEN_CLOSE = 8,   /* a listening socket closed */
};

enum mr_conn_role {
	MR_ROLE_UNKNOWN = 0, /* open before it was first seen */
	MR_ROLE_CLIENT = 1,  /* it called connect() */
	MR_ROLE_SERVER = 2,  /* it was accepted */
};

/* One event of a TCP connection (or listening socket). 112 bytes. */
struct mr_tcp_event {
	__u64 ts_ns;
	__u64 conn;        /* the socket's cookie */
	__u64 duration_ns; /* CONNECT, CONNECT_FAILED: from SYN sent; CLOSE: the connection's life */
	__u64 bytes_sent;  /* CLOSE: totals over the connection's life as seen */
	__u64 bytes_received;
	__s32 pid;         /* the process; 0 when not known (a connection closed before its first data) */
	__u32 kind;        /* enum mr_tcp_event_kind */
	__u32 retransmits; /* CLOSE: segments sent again */
	__u16 family;      /* AF_INET (2) or AF_INET6 (10) */
	__u8 role;         /* enum mr_conn_role */
	__u8 pad;
	__u16 local_port;
	__u16 remote_port;
	__u32 pad2;
	__u8 local_addr[16]; /* IPv4: the first 4 bytes */
	__u8 remote_addr[16];
	char comm[MR_NET_COMM_LEN];
};

enum mr_net_direction {
	MR_NET_INGRESS = 0, /* the process read the bytes */
	MR_NET_EGRESS = 1,  /* the process wrote the bytes */
};

enum mr_net_data_flags {
	MR_NET_TRUNCATED = 1,  /* copied < len - skipped: the rest was not copied */
	MR_NET_NO_PAYLOAD = 2, /* nothing could be copied (sendfile, splice, io_uring, a fault) */
	MR_NET_COUNT_ONLY = 4, /* the connection's verdict is to count bytes: len sums several syscalls */
};

/* What user space wants of a connection's bytes (the verdict map). */
enum mr_net_verdict {
	MR_NET_CAPTURE = 0, /* copy each syscall's first bytes (the default) */
	MR_NET_COUNT = 1,   /* count bytes only: a record at most every second per direction */
};

/* What user space wants of a connection's bytes: the verdicts map's value
 * (a connection without one: MR_NET_CAPTURE, nothing skipped). */
struct mr_net_capture {
	__u8 verdict; /* enum mr_net_verdict */
	__u8 pad[7];
	__u64 skip_to[2]; /* by enum mr_net_direction: bytes before this offset are not copied (0: none) */
};

/* One socket read or write; `copied` payload bytes follow the header: those
 * from offset + skipped on. */
struct mr_net_data {
	__u64 ts_ns;
	__u64 conn;   /* the socket's cookie */
	__u64 offset; /* bytes moved in this direction before these: a jump means records were lost,
			 or (up to the skip_to asked) not recorded */
	__s32 pid;
	__s32 tid;
	__u32 len;      /* bytes the syscall moved (COUNT_ONLY: since the last record) */
	__u32 copied;   /* bytes of payload following this header */
	__u8 direction; /* enum mr_net_direction */
	__u8 flags;     /* enum mr_net_data_flags */
	__u8 role;      /* enum mr_conn_role, as known when the bytes moved */
	__u8 pad;
	__u32 skipped; /* bytes at the start of this record (from `offset`) not copied: user space
			  asked to skip them (a body) */
};

/* Kernel-side counters of the network programs (net.bpf.c's .bss), one
 * slot of whole 64-byte lines per CPU (CPUs past MR_NET_COUNTER_SLOTS share
 * slots): one counter shared by all CPUs moved its cache line between them
 * on every record, which cost as much as the rest of the record. The
 * runtime sums the slots (mr_data_plane_net_counters). */
#define MR_NET_COUNTER_SLOTS 256 /* a power of two */

struct mr_net_counters {
	__u64 data_records;    /* data records sent */
	__u64 lost_data;       /* data records lost: the ring was full */
	__u64 lost_events;     /* connection events lost: the ring was full */
	__u64 truncated;       /* data records whose copy was cut (the payload limit, or many buffers) */
	__u64 unreadable;      /* data records of which no byte could be read */
	__u64 conns_full;      /* connections not tracked: the connection map was full */
	__u64 found_midstream; /* connections first seen after they opened */
	__u64 targets_full;    /* children of traced processes not traced: the targets map was full */
	__u64 closed_data;     /* reads and writes not recorded: their socket was closed and not tracked */
	__u64 skipped_records; /* reads and writes not recorded: wholly before their skip_to */
	__u64 skipped_bytes;   /* bytes not copied because user space asked to skip them */
};

/* One CPU's counters, on cache lines of their own. */
struct mr_net_counter_slot {
	struct mr_net_counters c;
} __attribute__((aligned(64)));

#endif
