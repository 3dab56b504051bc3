/* A CUPTI client library, linked against (fake) libcupti, as libkineto is. */
int cuptiSubscribe(void **s, void *cb, void *ud);
int fakecupti_subscribed(void);

__attribute__((visibility("default"))) int consumer_start_profiler(void)
{
    void *h = 0;
    int rc = cuptiSubscribe(&h, 0, 0);
    return rc == 0 && h != 0 && fakecupti_subscribed() == 1 ? 0 : 1;
}
