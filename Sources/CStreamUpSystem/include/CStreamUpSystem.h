// The few system calls Swift cannot import as they are declared, given a plain C signature here.
// System headers only; Linux only (on other systems the module is empty).
#ifndef C_STREAMUP_SYSTEM_H
#define C_STREAMUP_SYSTEM_H

#if defined(__linux__)

/// Asks the kernel to send `signal` to the calling process when the thread that started it
/// ends: `prctl(PR_SET_PDEATHSIG, signal)`, which C declares variadic, so Swift cannot call it.
/// The setting is kept across `execve`, except into set-user-ID programs.
/// Returns 0, or -1 with `errno` set.
int streamup_set_parent_death_signal(int signal);

#endif

#endif
