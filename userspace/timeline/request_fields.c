#include "timeline/request_fields.h"

#include <cJSON.h>
#include <stdio.h>
#include <string.h>

void tt_request_fields_init(tt_request_fields *f)
{
    memset(f, 0, sizeof *f);
    f->stream = TT_UNKNOWN;
    f->max_tokens = -1;
    f->min_tokens = -1;
    f->ignore_eos = TT_UNKNOWN;
    f->include_usage = TT_UNKNOWN;
}

static tt_tristate read_bool(const cJSON *obj, const char *name, tt_tristate previous)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (cJSON_IsBool(v)) return cJSON_IsTrue(v) ? TT_TRUE : TT_FALSE;
    return previous;
}

static bool read_count(const cJSON *obj, const char *name, int64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, name);
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9.0e15) return false;
    *out = (int64_t)v->valuedouble;
    return true;
}

static const char *const max_token_spellings[] = {
    "max_tokens", "max_completion_tokens", "max_output_tokens", "max_new_tokens",
    "num_predict", "n_predict",
};

static void read_limits(tt_request_fields *f, const cJSON *obj)
{
    if (!cJSON_IsObject(obj)) return;
    for (size_t i = 0; i < sizeof max_token_spellings / sizeof *max_token_spellings; i++) {
        if (f->max_tokens < 0 && read_count(obj, max_token_spellings[i], &f->max_tokens)) {
            snprintf(f->max_tokens_field, sizeof f->max_tokens_field, "%s", max_token_spellings[i]);
        }
    }
    if (f->min_tokens < 0) read_count(obj, "min_tokens", &f->min_tokens);
    f->ignore_eos = read_bool(obj, "ignore_eos", f->ignore_eos);
}

void tt_request_fields_parse(tt_request_fields *f, const char *body, size_t len)
{
    f->body_seen = true;
    cJSON *root = cJSON_ParseWithLength(body, len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return;
    }
    f->body_json_ok = true;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (cJSON_IsString(model)) snprintf(f->model, sizeof f->model, "%s", model->valuestring);
    f->stream = read_bool(root, "stream", f->stream);
    read_limits(f, root);
    read_limits(f, cJSON_GetObjectItemCaseSensitive(root, "parameters"));
    read_limits(f, cJSON_GetObjectItemCaseSensitive(root, "options"));
    const cJSON *opts = cJSON_GetObjectItemCaseSensitive(root, "stream_options");
    if (cJSON_IsObject(opts)) f->include_usage = read_bool(opts, "include_usage", f->include_usage);
    else if (f->stream == TT_TRUE) f->include_usage = TT_FALSE;
    cJSON_Delete(root);
}
