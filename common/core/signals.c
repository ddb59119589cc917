#include "signals.h"

#include <signal.h>
#include <string.h>

atomic_int nq_stop;
atomic_int nq_stop_signal;

static void on_signal(int sig)
{
    atomic_store(&nq_stop_signal, sig);
    atomic_store(&nq_stop, 1);
}

void signals_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
}
