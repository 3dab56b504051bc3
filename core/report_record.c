/* The kind table of core/report_record.h, from core/report_kinds.inc. */
#include "core/report_record.h"

#include <stddef.h>
#include <string.h>

const struct tg_report_kind_info tg_report_kinds[TG_REPORT_NKINDS] = {
#define TG_REPORT_KIND(ID, json_, title_, what_, body, supp_, flags_, exit)                                    \
    [TG_REPORT_##ID] = {.json = json_, .title = title_, .what = what_, .supp = supp_, .flags = flags_},
#include "core/report_kinds.inc"
#undef TG_REPORT_KIND
};

int tg_report_fails(enum tg_report_kind k, int serialized, int low, int prevented_is_race)
{
    if ((unsigned)k >= TG_REPORT_NKINDS)
        return 1;
    unsigned f = tg_report_kinds[k].flags;
    if ((f & TG_KIND_INFO) || (low && (f & TG_KIND_SEVERITY)))
        return 0;
    return !((f & TG_KIND_PREVENTED) && serialized) || prevented_is_race;
}

enum tg_report_kind tg_report_kind_of_json(const char *json)
{
    for (int k = 0; json && k < TG_REPORT_NKINDS; k++)
        if (strcmp(tg_report_kinds[k].json, json) == 0)
            return (enum tg_report_kind)k;
    return TG_REPORT_NKINDS;
}
