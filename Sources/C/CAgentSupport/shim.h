// What the store agent needs from Linux that Swift cannot call directly: prctl(2) is variadic, and struct ucred
// (SO_PEERCRED) is only declared with _GNU_SOURCE, which would change glibc's other declarations for this module
// alone; its layout (pid_t, uid_t, gid_t) is spelled out instead.
#ifndef CAGENTSUPPORT_SHIM_H
#define CAGENTSUPPORT_SHIM_H

#ifdef __linux__
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>

/// Makes this process not dumpable: no core file, and no ptrace attach or /proc/PID/mem read by other processes of
/// the same user (root excepted). 0 on success, -1 with errno.
static inline int cagent_set_not_dumpable(void) { return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); }

/// 1 when dumpable, 0 when not, -1 with errno.
static inline int cagent_dumpable(void) { return prctl(PR_GET_DUMPABLE, 0, 0, 0, 0); }

/// The user ID of the process at the other end of the connected Unix socket `fd`. 0 on success, -1 with errno.
static inline int cagent_peer_uid(int fd, unsigned int *uid) {
    struct { pid_t pid; uid_t uid; gid_t gid; } credentials;
    socklen_t length = sizeof(credentials);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *uid = (unsigned int)credentials.uid;
    return 0;
}
#endif

#endif
