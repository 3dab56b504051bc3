/* A program that is not Python, linked against libtunerguard.so (so that the
 * library loads under secure execution, where LD_PRELOAD paths are not
 * followed).  Prints whether the kernel marked the process secure. */
#include <stdio.h>
#include <sys/auxv.h>

int main(void)
{
    printf("AT_SECURE=%lu\n", getauxval(AT_SECURE));
    return 0;
}
