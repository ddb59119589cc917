/*
 * The hungry list: the peers with credit left that may get work. The scheduler walks only these,
 * so 10^4 busy workers cost nothing per round; whatever moves a peer's credit, its outstanding
 * leases or its quarantine calls hungry_update.
 */
#include "broker_impl.h"

void hungry_update(nq_broker_t *b, nq_peer_t *p)
{
    int want = p->outstanding < p->credit && !ident_quarantined(b, p->rec);
    if (want == p->hungry)
        return;
    if (want) {
        p->hungry_prev = NULL;
        p->hungry_next = b->hungry;
        if (b->hungry)
            b->hungry->hungry_prev = p;
        b->hungry = p;
    } else {
        if (p->hungry_prev) p->hungry_prev->hungry_next = p->hungry_next;
        else b->hungry = p->hungry_next;
        if (p->hungry_next) p->hungry_next->hungry_prev = p->hungry_prev;
        p->hungry_next = p->hungry_prev = NULL;
    }
    p->hungry = want;
}

