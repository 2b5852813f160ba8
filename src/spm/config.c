/*
 * src/spm/config.c - the per-core scratchpad heap's configuration: defaults,
 * validation, the text form "table=4096,frames=1,gran=1,unit=256,
 * segment=16384,harden=checked,timing=off,on_error=report" (docs/spm.md).
 */
#include "spm_internal.h"

#include "../core/text.h"

dmm_spm_config dmm_spm_default_config(void)
{
    dmm_spm_config c;
    c.table_bytes = 4096;
    c.table_frames = 1;
    c.gran = 1;
    c.unit_bytes = 256;
    c.segment = 16384;
    c.harden = DMM_HARDEN_CHECKED;
    c.timing = false;
    c.on_error = DMM_ON_ERROR_REPORT;
    c.error_fn = NULL;
    c.error_ctx = NULL;
    return c;
}

static bool pow2(size_t x) { return x && !(x & (x - 1)); }

dmm_status dmm_spm_config_check_(const dmm_spm_config *c, const char **reason)
{
    const char *r = NULL;
    if (c->table_frames < 1 || c->table_frames > SPM_MAX_FRAMES)
        r = "frames must be 1..16";
    else if (c->table_bytes == 0 || c->table_bytes % (16u * c->table_frames))
        r = "table must be a multiple of 16 * frames";
    else if (c->table_bytes / c->table_frames < SPM_HDR_BYTES + DMM_SPM_ENTRY_BYTES)
        r = "a table page (table / frames) must hold the 32-byte segment header and one entry";
    else if (c->table_bytes / c->table_frames / 16u - 2u > 65535u)
        r = "a table page holds at most 65535 entries";
    else if (c->gran < 1 || c->gran > DMM_SPM_MAX_GRAN)
        r = "gran must be 1..16";
    else if (c->unit_bytes < 16 || c->unit_bytes > 65535u * 16u)
        r = "unit must be 16 bytes .. 1 MiB";
    else if (!pow2(c->segment) || c->segment > ((size_t)1 << 30))
        r = "segment must be a power of two up to 1 GiB";
    else if (c->segment < 2 * (c->table_bytes / c->table_frames))
        r = "segment must be at least twice the table page (table / frames)";
    else if (c->segment - c->table_bytes / c->table_frames < ((c->unit_bytes + 15u) & ~(size_t)15u))
        r = "a unit must fit in a segment after its table page";
    else if ((unsigned)c->harden > DMM_HARDEN_PARANOID)
        r = "harden out of range";
    else if ((unsigned)c->on_error > DMM_ON_ERROR_ABORT)
        r = "on_error out of range";
    if (reason)
        *reason = r;
    return r ? DMM_E_CONFIG : DMM_OK;
}

static const char *const harden_names[] = {"off", "checked", "canary", "paranoid"};

dmm_status dmm_spm_config_parse(const char *text, dmm_spm_config *cfg, const char **err)
{
    const char *e = NULL;
    if (!text || !cfg) {
        if (err)
            *err = "NULL text or config";
        return DMM_E_NULL;
    }
    dmm_spm_config c = *cfg;
    const char *p = text;
    while (*p && !e) {
        while (*p == ' ' || *p == '\t')
            p++;
        const char *k = p;
        while (*p && *p != '=' && *p != ',' && *p != ' ')
            p++;
        size_t kn = (size_t)(p - k);
        while (*p == ' ')
            p++;
        if (kn == 0 && *p == '\0')
            break;
        if (*p != '=') {
            e = kn ? "expected key=value" : "empty key";
            break;
        }
        p++;
        while (*p == ' ')
            p++;
        const char *v = p;
        while (*p && *p != ',' && *p != ' ')
            p++;
        size_t vn = (size_t)(p - v);
        while (*p == ' ')
            p++;
        if (*p == ',')
            p++;
        else if (*p) {
            e = "expected ',' between settings";
            break;
        }
        uint64_t n = 0;
        if (dmm_token_eq(k, kn, "table") || dmm_token_eq(k, kn, "frames") ||
            dmm_token_eq(k, kn, "gran") || dmm_token_eq(k, kn, "unit") ||
            dmm_token_eq(k, kn, "segment")) {
            if (dmm_parse_size(v, vn, &n) != 0 || n > (uint64_t)((size_t)-1) || n > (1ull << 40)) {
                e = "bad number";
                break;
            }
            if (dmm_token_eq(k, kn, "table"))
                c.table_bytes = (size_t)n;
            else if (dmm_token_eq(k, kn, "frames"))
                c.table_frames = n > 1000000u ? 1000000u : (unsigned)n;
            else if (dmm_token_eq(k, kn, "gran"))
                c.gran = n > 1000000u ? 1000000u : (unsigned)n;
            else if (dmm_token_eq(k, kn, "unit"))
                c.unit_bytes = (size_t)n;
            else
                c.segment = (size_t)n;
        } else if (dmm_token_eq(k, kn, "harden")) {
            unsigned i;
            for (i = 0; i < 4; i++)
                if (dmm_token_eq(v, vn, harden_names[i]))
                    break;
            if (i == 4)
                e = "harden must be off, checked, canary or paranoid";
            else
                c.harden = (dmm_heap_harden)i;
        } else if (dmm_token_eq(k, kn, "timing")) {
            if (dmm_token_eq(v, vn, "on"))
                c.timing = true;
            else if (dmm_token_eq(v, vn, "off"))
                c.timing = false;
            else
                e = "timing must be on or off";
        } else if (dmm_token_eq(k, kn, "on_error")) {
            if (dmm_token_eq(v, vn, "report"))
                c.on_error = DMM_ON_ERROR_REPORT;
            else if (dmm_token_eq(v, vn, "abort"))
                c.on_error = DMM_ON_ERROR_ABORT;
            else
                e = "on_error must be report or abort";
        } else {
            e = "unknown key (table, frames, gran, unit, segment, harden, timing, on_error)";
        }
    }
    if (!e)
        dmm_spm_config_check_(&c, &e);
    if (err)
        *err = e;
    if (e)
        return DMM_E_CONFIG;
    *cfg = c;
    return DMM_OK;
}

size_t dmm_spm_config_format(const dmm_spm_config *cfg, char *buf, size_t cap)
{
    dmm_text t;
    dmm_text_init(&t, buf, cap);
    if (!cfg)
        return 0;
    dmm_text_str(&t, "table=");
    dmm_text_u64(&t, cfg->table_bytes);
    dmm_text_str(&t, ",frames=");
    dmm_text_u64(&t, cfg->table_frames);
    dmm_text_str(&t, ",gran=");
    dmm_text_u64(&t, cfg->gran);
    dmm_text_str(&t, ",unit=");
    dmm_text_u64(&t, cfg->unit_bytes);
    dmm_text_str(&t, ",segment=");
    dmm_text_u64(&t, cfg->segment);
    dmm_text_str(&t, ",harden=");
    dmm_text_str(&t, (unsigned)cfg->harden < 4 ? harden_names[cfg->harden] : "?");
    dmm_text_str(&t, cfg->timing ? ",timing=on" : ",timing=off");
    dmm_text_str(&t, cfg->on_error == DMM_ON_ERROR_ABORT ? ",on_error=abort" : ",on_error=report");
    return t.len;
}
