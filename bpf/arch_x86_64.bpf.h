/* arch_x86_64.bpf.h - x86-64's syscall numbers and registers, as the BPF
 * programs read them: the syscall a task is in and its arguments from its
 * saved user registers, a sample's user pc, stack and frame pointers, and
 * where a signal frame's ucontext keeps them. Included through arch.bpf.h. */
#ifndef MR_BPF_ARCH_X86_64_H
#define MR_BPF_ARCH_X86_64_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>

/* Syscall numbers (arch/x86/entry/syscalls/syscall_64.tbl). */
#define MR_NR_READ 0
#define MR_NR_WRITE 1
#define MR_NR_READV 19
#define MR_NR_WRITEV 20
#define MR_NR_SENDTO 44
#define MR_NR_RECVFROM 45
#define MR_NR_SENDMSG 46
#define MR_NR_RECVMSG 47
#define MR_NR_GETPPID 110

/* The syscall the task is in and its arguments (di, si, dx, r10, r8, r9),
 * by direct loads: regs is a BTF pointer (bpf_task_pt_regs). */
#define MR_SYSCALL_NR(regs) ((long)(regs)->orig_ax)
#define MR_SYSCALL_ARG2(regs) ((regs)->si)
#define MR_SYSCALL_ARG3(regs) ((regs)->dx)

/* The user pc, stack pointer and frame pointer in saved registers. */
#define MR_REGS_IP(regs) BPF_CORE_READ(regs, ip)
#define MR_REGS_SP(regs) BPF_CORE_READ(regs, sp)
#define MR_REGS_FP(regs) BPF_CORE_READ(regs, bp)

/* Offsets in the ucontext a signal trampoline's stack pointer points at. */
#define MR_UCONTEXT_FP 120
#define MR_UCONTEXT_SP 160
#define MR_UCONTEXT_IP 168

#endif
