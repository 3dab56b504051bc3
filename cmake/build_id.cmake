# The build id: one string per build tree, made at its first configure and kept
# in the cache, compiled into libtunerguard.so (core/build_id.c) and into the
# tunerguard command, so that `tunerguard doctor` can tell a library from
# another build (another checkout, an older install, a wheel) from its own.
# Form: <UTC time of the first configure>-<8 random hex digits> (no commit:
# the tree outlives the commit it was configured at).
if(NOT TG_BUILD_ID)
  string(TIMESTAMP _tg_ts "%Y%m%dT%H%M%SZ" UTC)
  string(RANDOM LENGTH 8 ALPHABET 0123456789abcdef _tg_rnd)
  set(_tg_id "${_tg_ts}-${_tg_rnd}")
  set(TG_BUILD_ID "${_tg_id}" CACHE INTERNAL "build id of this build tree (cmake/build_id.cmake)")
endif()
set(TG_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)
# configure_file rewrites the header only when its text changes: a reconfigure
# of the same tree rebuilds nothing.
configure_file(${CMAKE_SOURCE_DIR}/cmake/build_id.h.in ${TG_GENERATED_DIR}/tg_build_id.h @ONLY)
