/* The fake's synchronize gate: an armed gate parks exactly the next
 * synchronize call, on whichever thread, until opened; unarmed, nothing parks.
 * Runs with or without tunerguard preloaded. */
#include "tests/fakecuda/fakecuda.h"

#include <cuda.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHECK(c)                                                           \
    do {                                                                   \
        if (!(c)) {                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #c); \
            exit(1);                                                       \
        }                                                                  \
    } while (0)

static int which;
static volatile int worker_tid, worker_done;

static void *worker(void *arg)
{
    worker_tid = (int)syscall(SYS_gettid);
    switch (which) {
    case 0: CHECK(cuCtxSynchronize() == CUDA_SUCCESS); break;
    case 1: CHECK(cuCtxSynchronize_v2(NULL) == CUDA_SUCCESS); break;
    case 2: CHECK(cuStreamSynchronize(NULL) == CUDA_SUCCESS); break;
    case 3: CHECK(cuEventSynchronize(NULL) == CUDA_SUCCESS); break;
    }
    __atomic_store_n(&worker_done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

int main(void)
{
    /* unarmed: nothing parks */
    CHECK(fakecuda_gate_wait_parked(0.05) == 0);
    CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
    CHECK(fakecuda_gate_parked_tid() == 0);

    for (which = 0; which < 4; which++) {
        worker_done = 0;
        CHECK(fakecuda_gate_arm() == 0);
        pthread_t th;
        CHECK(pthread_create(&th, NULL, worker, NULL) == 0);
        CHECK(fakecuda_gate_wait_parked(10.0) == 1);
        CHECK(fakecuda_gate_parked_tid() == worker_tid);
        CHECK(fakecuda_gate_arm() == -1);   /* one parked at a time */
        /* the gate is disarmed once a thread parked: this one passes */
        CHECK(cuStreamSynchronize(NULL) == CUDA_SUCCESS);
        /* ... and the worker is still parked, by the fake's own word rather
         * than after a sleep: the gate keeps the parked tid until the thread
         * is on its way out (only fakecuda_gate_open, or its 60 s safety
         * timeout, lets it out), and the worker sets worker_done only after
         * its call returned. */
        CHECK(fakecuda_gate_parked_tid() == worker_tid);
        CHECK(__atomic_load_n(&worker_done, __ATOMIC_SEQ_CST) == 0);
        fakecuda_gate_open();
        CHECK(pthread_join(th, NULL) == 0);
        CHECK(worker_done == 1);
        CHECK(fakecuda_gate_parked_tid() == 0);
    }
    /* non-synchronize calls never park */
    CHECK(fakecuda_gate_arm() == 0);
    CHECK(cuStreamQuery(NULL) == CUDA_SUCCESS);
    CHECK(fakecuda_gate_wait_parked(0.05) == 0);
    fakecuda_gate_open();                  /* disarms */
    CHECK(cuCtxSynchronize() == CUDA_SUCCESS);
    printf("gate ok\n");
    return 0;
}
