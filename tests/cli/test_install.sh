# cmake --install puts the command, the library and the man page under the prefix,
# and the installed command finds the installed library (../lib*/ relative to itself).
. "$(dirname "$0")/lib.sh"
command -v cmake >/dev/null 2>&1 || { echo "skip - no cmake"; exit 77; }
BUILD=$(dirname "$TG")
cd "$WORK"
cmake --install "$BUILD" --prefix "$WORK/inst" >install.log 2>&1
check "cmake --install succeeds" [ $? = 0 ]
check "bin/tunerguard installed" [ -x "$WORK/inst/bin/tunerguard" ]
check "share/man/man1/tunerguard.1 installed" [ -f "$WORK/inst/share/man/man1/tunerguard.1" ]
LIB=$(ls "$WORK"/inst/lib*/libtunerguard.so "$WORK"/inst/lib/*/libtunerguard.so 2>/dev/null | head -1)
check "libtunerguard.so installed under lib" [ -n "$LIB" ]
out=$(env -u LD_PRELOAD -u TUNERGUARD_LIB "$WORK/inst/bin/tunerguard" run -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
check "installed command preloads the installed library" [ "$out" = "$(readlink -f "$LIB")" ]
finish
