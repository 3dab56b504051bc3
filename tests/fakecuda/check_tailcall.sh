#!/bin/sh
# The exported dlsym must end its pass-through path in an indirect jump (a
# tail call), or other interposers' dlsym(RTLD_NEXT, ...) breaks.
set -e
lib="$1"
objdump -d --no-show-raw-insn --disassemble=dlsym "$lib" > dlsym.dis
if grep -Eq 'jmp +\*%r' dlsym.dis; then echo "tail call ok"; exit 0; fi
cat dlsym.dis
echo "dlsym has no indirect tail jump" >&2
exit 1
