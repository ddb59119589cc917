/* Waking a loop blocked in zmq_poll from another thread. See wake.h. */
#include "wake.h"

#include <zmq.h>

void wake_poke(void *ctx, const char *ep)
{
    void *push = zmq_socket(ctx, ZMQ_PUSH);
    if (!push)
        return;
    int linger = 1000;   /* inproc delivers at once; this only bounds a close before it did */
    zmq_setsockopt(push, ZMQ_LINGER, &linger, sizeof linger);
    if (zmq_connect(push, ep) == 0)
        zmq_send(push, "", 0, ZMQ_DONTWAIT);
    zmq_close(push);
}
