/* kernel_defs.bpf.h - the kernel's macro values the BPF programs test,
 * which vmlinux.h cannot carry (BTF holds types and enums, not #defines):
 * errno values from the kernel's uapi header, and, written here once, the
 * few from kernel-internal headers (linux/sched.h, linux/socket.h). */
#ifndef MR_BPF_KERNEL_DEFS_H
#define MR_BPF_KERNEL_DEFS_H

#include <asm-generic/errno-base.h>

/* task_struct.flags (linux/sched.h) */
#define PF_EXITING 0x00000004 /* the task is past its exit tracepoint */
#define PF_KTHREAD 0x00200000 /* a kernel thread: it has no user stack */

/* task_struct.__state (linux/sched.h) */
#define TASK_RUNNING 0x00000000

/* Socket address families and recvmsg flags (linux/socket.h) */
#define AF_INET 2
#define AF_INET6 10
#define MSG_PEEK 2

#endif
