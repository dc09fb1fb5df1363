/* arch.bpf.h - the target architecture's syscall numbers and register
 * accessors, from the header of the architecture the build names
 * (-D__TARGET_ARCH_x86). A new architecture adds its own arch_*.bpf.h with
 * the same names. */
#ifndef MR_BPF_ARCH_H
#define MR_BPF_ARCH_H

#if defined(__TARGET_ARCH_x86)
#include "arch_x86_64.bpf.h"
#else
#error "moonrover's BPF programs know x86-64 only (arch_x86_64.bpf.h)"
#endif

#endif
