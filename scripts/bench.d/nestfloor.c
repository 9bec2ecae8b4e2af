/* The floor of snug's outer layer for B1 (SPEC B1): what snug's nest must do and nothing
 * else. With no arguments it exits at once (the cost of its own exec, subtracted). With a
 * command it does what nest does before bwrap: clone(2) a child as pid 1 of a new pid and
 * mount namespace (and user namespace, with identity maps, when not root), make the mount
 * tree private, mount a procfs of the new pid namespace on /proc (mount(2), proc(5)), execve
 * the command with an empty environment; the parent waits and exits with its status.
 * Built by scripts/bench with cc; no snug code, so nothing snug adds is in the floor. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void put(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
        _exit(125);
    close(fd);
}

int main(int argc, char **argv) {
    if (argc < 2)
        return 0;
    int root = geteuid() == 0;
    char umap[64], gmap[64];
    snprintf(umap, sizeof umap, "%u %u 1\n", getuid(), getuid());
    snprintf(gmap, sizeof gmap, "%u %u 1\n", getgid(), getgid());
    long flags = CLONE_NEWPID | CLONE_NEWNS | (root ? 0 : CLONE_NEWUSER) | SIGCHLD;
    /* A fork-like clone: no new stack, the child runs on a copy of this one. */
    pid_t pid = syscall(SYS_clone, flags, NULL, NULL, NULL, NULL);
    if (pid < 0)
        return 126;
    if (pid == 0) {
        if (!root) {
            put("/proc/self/setgroups", "deny");
            put("/proc/self/gid_map", gmap);
            put("/proc/self/uid_map", umap);
        }
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
            _exit(124);
        if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0)
            _exit(123);
        char *envp[] = {NULL};
        execve(argv[1], argv + 1, envp);
        _exit(127);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid)
        return 122;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
