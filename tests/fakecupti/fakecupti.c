/* A stand-in libcupti.so.13 for one question: does a CUPTI client loaded in a
 * local scope (torch's libkineto, pulled in RTLD_LOCAL by Python) still reach
 * the real cuptiSubscribe when tunerguard is preloaded and cupti=0?
 * tunerguard exports cuptiSubscribe* to hand CUPTI over to such clients, so
 * every call of theirs goes through it first. */
#include <stddef.h>

static int subscribed;

__attribute__((visibility("default"))) int cuptiSubscribe(void **s, void *cb, void *ud)
{
    (void)cb;
    (void)ud;
    subscribed++;
    if (s)
        *s = &subscribed;
    return 0; /* CUPTI_SUCCESS */
}

__attribute__((visibility("default"))) int fakecupti_subscribed(void)
{
    return subscribed;
}
