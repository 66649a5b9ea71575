/* The pod sandbox's process (containerd's sandbox_image) for the test cluster's real node:
 * it holds the pod's namespaces open, reaps the children the pod's PID namespace hands it,
 * and exits when it is told to stop. Built by the harness with `gcc -static` (no libc in the
 * image). */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void) {
    if (getpid() != 1) {
        fprintf(stderr, "pause: not PID 1 of its PID namespace; running anyway\n");
    }
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    for (;;) {
        int signal = 0;
        if (sigwait(&set, &signal) != 0) {
            continue;
        }
        if (signal == SIGCHLD) {
            while (waitpid(-1, NULL, WNOHANG) > 0) {
            }
            continue;
        }
        return 0;
    }
}
