/* The kind table of core/report_record.h, from core/report_kinds.inc. */
#include "core/report_record.h"

#include <stddef.h>

const struct tg_report_kind_info tg_report_kinds[TG_REPORT_NKINDS] = {
#define TG_REPORT_KIND(ID, json_, title_, what_, body, supp_, flags_, exit)                                    \
    [TG_REPORT_##ID] = {.json = json_, .title = title_, .what = what_, .supp = supp_, .flags = flags_},
#include "core/report_kinds.inc"
#undef TG_REPORT_KIND
};
