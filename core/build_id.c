/* The build id of this library (cmake/build_id.cmake), as one string in the
 * file: TG_BUILD_ID_MARKER followed by the id.  Nothing reads it at run time;
 * `tunerguard doctor` finds it in the library file and compares it with its
 * own, to say when the library it found comes from another build. */
#include "tg_build_id.h"

__attribute__((used)) static const char tg_build_id[] = TG_BUILD_ID_MARKER TG_BUILD_ID;
