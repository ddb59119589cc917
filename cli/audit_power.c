/*
 * What an audit's sample proves (audit.h): drawing k of a manifest's lines at random, a manifest
 * with a share f of them wrong passes only when every draw misses, with probability at most
 * (1 - f)^k (drawn without replacement it is smaller still). So k lines catch a share
 * f = 1 - 0.01^(1/k) with probability 0.99, and catching a share f takes k = ln 0.01 / ln(1 - f):
 * 459 lines for 1 %, whatever the manifest's size.
 */
#include "audit.h"

#include <math.h>

#define AUDIT_MISS 0.01                /* the chance of missing that is stated: 0.99 power */

double audit_power_share(uint64_t drawn)
{
    return drawn == 0 ? 1.0 : 1.0 - pow(AUDIT_MISS, 1.0 / (double)drawn);
}

uint64_t audit_power_sample(double share)
{
    if (!(share > 0) || share >= 1)
        return 1;
    return (uint64_t)ceil(log(AUDIT_MISS) / log1p(-share) - 1e-9);   /* 1e-9: 459.000...01 is 459 */
}
