#include "cli.h"
int cli_repro(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return 1;
}
