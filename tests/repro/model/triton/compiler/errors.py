# Model of triton/compiler/errors.py: only what Autotuner._bench imports.


class CompileTimeAssertionFailure(Exception):
    pass
