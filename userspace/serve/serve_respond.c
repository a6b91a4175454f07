/* serve_respond.c - the answers of tokentap serve: a request's response
 * built by its profile (a stream planned and written on its schedule, the
 * framing faults, a simple answer or an error) and its "request" log line.
 * The connection side (reading, the output queue, flushing with every write
 * logged) is serve_conn.c. */
#include "serve/serve_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/serve_metrics.h"

static const char *status_text(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 500: return "Internal Server Error";
    case 413: return "Payload Too Large";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 408: return "Request Timeout";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 529: return "Overloaded";
    default: return "Error";
    }
}

static void log_request(serve_conn *c, const serve_req *r, int status, bool stream,
                        const tt_serve_request *params, size_t n_events)
{
    tt_sbuf *b = tt_serve_log_begin(c->srv->log);
    if (!b) return;
    tt_sbuf_puts(b, "{\"type\":\"request\",\"request_read_ns\":");
    tt_sbuf_u64(b, r->read_ns);
    tt_sbuf_puts(b, ",\"peer\":");
    tt_sbuf_json_str(b, c->peer, strlen(c->peer));
    tt_sbuf_puts(b, ",\"ordinal\":");
    tt_sbuf_u64(b, r->ordinal);
    tt_sbuf_puts(b, ",\"request_id\":");
    if (r->request_id) tt_sbuf_json_str(b, r->request_id, strlen(r->request_id));
    else tt_sbuf_puts(b, "null");
    if (c->stream_id) tt_sbuf_printf(b, ",\"stream_id\":%d", (int)c->stream_id);
    tt_sbuf_puts(b, ",\"method\":");
    tt_sbuf_json_str(b, r->method, strlen(r->method));
    tt_sbuf_puts(b, ",\"path\":");
    tt_sbuf_json_str(b, r->path, strlen(r->path));
    tt_sbuf_printf(b, ",\"status\":%d,\"stream\":%s", status, stream ? "true" : "false");
    if (params)
        tt_sbuf_printf(b, ",\"tokens\":%u,\"prompt_tokens\":%u,\"finish_reason\":\"%s\"",
                       params->n_tokens, params->prompt_tokens, params->finish_reason);
    if (stream) tt_sbuf_printf(b, ",\"events\":%zu", n_events);
    if (stream && c->srv->cfg.faults.error_after >= 0 && params &&
        (uint64_t)c->srv->cfg.faults.error_after < params->n_tokens)
        tt_sbuf_puts(b, ",\"fault\":\"error-after\"");
    else if (stream && c->abort_at_end)
        tt_sbuf_puts(b, ",\"fault\":\"close-after\"");
    tt_sbuf_puts(b, "}\n");
    tt_serve_log_commit(c->srv->log);
}

/* The active response is complete: retire its request. */
static void finish_response(serve_conn *c)
{
    serve_req *r = c->q_head;
    c->active = false;
    free(c->plan);
    c->plan = NULL;
    c->plan_n = c->plan_next = 0;
    c->part_active = false;
    c->held = 0;
    tt_heap_remove(&c->srv->heap, &c->timer);
    if (r) {
        c->q_head = r->next;
        if (!c->q_head) c->q_tail = NULL;
        c->q_len--;
        if (!r->keep_alive) c->close_when_drained = true;
        tt_sbuf_free(&r->body);
        r->next = c->retired;
        c->retired = r;
    }
    (void)tt_serve_log_flush(c->srv->log);
    if (c->out.len == 0) {
        tt_serve_free_reqs(c->retired);
        c->retired = NULL;
    }
}

static void send_simple(serve_conn *c, serve_req *r, int status, const char *ctype,
                        const char *body, size_t body_len, bool close_after,
                        const tt_serve_request *params)
{
    if (close_after) r->keep_alive = false;
    tt_sbuf head = {0};
    tt_sbuf_printf(&head, "HTTP/1.1 %d %s\r\nserver: tokentap-serve\r\n", status, status_text(status));
    if (ctype) tt_sbuf_printf(&head, "content-type: %s\r\n", ctype);
    tt_sbuf_printf(&head, "content-length: %zu\r\n", body_len);
    if (!r->keep_alive) tt_sbuf_puts(&head, "connection: close\r\n");
    tt_sbuf_puts(&head, "\r\n");
    if (head.oom) { tt_serve_conn_kill(c); tt_sbuf_free(&head); return; }
    c->body_off = 0;
    tt_serve_conn_append(c, r, 0, "body", true, head.p, head.len, body, body_len, NULL, 0);
    tt_sbuf_free(&head);
    log_request(c, r, status, false, params, 0);
    tt_serve_conn_flush(c);
    c->active = true;
    finish_response(c);
}

static void send_error(serve_conn *c, serve_req *r, int status, const char *type, const char *msg,
                       bool close_after)
{
    tt_sbuf body = {0};
    tt_sbuf_puts(&body, "{\"error\":{\"message\":");
    tt_sbuf_json_str(&body, msg, strlen(msg));
    tt_sbuf_printf(&body, ",\"type\":\"%s\",\"code\":%d}}", type, status);
    send_simple(c, r, status, "application/json", body.p, body.len, close_after, NULL);
    tt_sbuf_free(&body);
}

static void start_stream(serve_conn *c, serve_req *r)
{
    serve_worker *s = c->srv;
    const tt_serve_faults *f = &s->cfg.faults;
    size_t cap = tt_serve_plan_cap(&c->params);
    c->plan = malloc(cap * sizeof *c->plan);
    if (!c->plan) { tt_serve_conn_kill(c); return; }
    c->plan_n = tt_serve_plan(s->cfg.profile, &c->params, c->plan);
    c->plan_next = 0;
    c->abort_at_end = false;
    if (f->error_after >= 0 && (uint64_t)f->error_after < c->params.n_tokens) {
        c->plan_n = tt_serve_plan_error_after(s->cfg.profile, c->plan, c->plan_n, (uint32_t)f->error_after);
    } else if (f->close_after >= 0 && (uint64_t)f->close_after < c->params.n_tokens) {
        c->plan_n = tt_serve_plan_cut_at_token(c->plan, c->plan_n, (uint32_t)f->close_after);
        c->abort_at_end = true;
    }
    c->chunked = r->version_minor >= 1;
    if (!c->chunked) r->keep_alive = false;
    c->active = true;
    c->part_active = false;
    c->held = 0;
    c->itl_cursor = 0;
    tt_sbuf head = {0};
    tt_sbuf_printf(&head, "HTTP/1.1 200 OK\r\nserver: tokentap-serve\r\n"
                          "content-type: %s\r\n%s%s%s\r\n",
                   s->cfg.profile->stream_content_type, s->cfg.profile->extra_headers,
                   c->chunked ? "transfer-encoding: chunked\r\n" : "",
                   r->keep_alive ? "" : "connection: close\r\n");
    c->body_off = 0;
    if (!c->grpc) /* a gRPC request's stream has its one head already (serve_grpc.c) */
        tt_serve_conn_append(c, r, -1, "head", true, head.p, head.len, NULL, 0, NULL, 0);
    tt_sbuf_free(&head);
    log_request(c, r, 200, true, &c->params, c->plan_n);
    tt_serve_conn_flush(c);
    c->first_token_at = c->last_token_at = 0;
    uint64_t ttft_cursor = c->generation_number ? c->generation_number - 1 : 0;
    c->token_due = r->read_ns + tt_dist_draw(&s->cfg.ttft, &c->rng, &ttft_cursor);
    uint64_t now = tt_serve_mono_ns();
    c->keepalive_due = now + f->keepalive_ns;
    tt_serve_emit_due(c, now);
}

/* The server's own view of the stream, as vLLM's frontend keeps it. */
static void note_emission(serve_conn *c, const tt_serve_event *ev, uint64_t t, bool last)
{
    tt_serve_metrics *m = &c->srv->metrics;
    uint64_t read_ns = c->q_head ? c->q_head->read_ns : t;
    pthread_mutex_lock(&c->srv->metrics_lock);
    if (ev->kind == TT_SEV_TOKEN) {
        if (!c->first_token_at) {
            c->first_token_at = t;
            tt_serve_hist_observe(&m->ttft, t > read_ns ? t - read_ns : 0);
        } else {
            tt_serve_hist_observe(&m->itl, t > c->last_token_at ? t - c->last_token_at : 0);
        }
        c->last_token_at = t;
    }
    if (last && !c->abort_at_end) {
        tt_serve_hist_observe(&m->e2e, t > read_ns ? t - read_ns : 0);
        m->requests_finished++;
    }
    pthread_mutex_unlock(&c->srv->metrics_lock);
}

/* Begin writing plan event `index`: build its bytes and its cut points. */
static void start_event(serve_conn *c, size_t index)
{
    serve_worker *s = c->srv;
    const tt_serve_faults *f = &s->cfg.faults;
    uint64_t read_ns = c->q_head ? c->q_head->read_ns : 0, now = tt_serve_mono_ns();
    c->params.elapsed_ns = now > read_ns ? now - read_ns : 0;
    c->params.first_token_ns = c->first_token_at > read_ns ? c->first_token_at - read_ns : 0;
    tt_sbuf_reset(&c->part_frame);
    tt_serve_frame(s->cfg.profile, &c->params, &c->plan[index], &c->part_frame);
    if (c->part_frame.oom) { tt_serve_conn_kill(c); return; }
    c->part_ev = c->plan[index];
    c->part_index = index;
    c->part_n_cuts = tt_split_cuts(f->split_at, f->n_split, c->part_frame.len, c->part_cuts);
    c->part_next = 0;
    c->part_due = 0;
    c->part_active = true;
    if (c->held == 0) c->held_from = index;
}

/* Write the next part of the current event (the whole event when it is not
 * split); with --coalesce, hold whole events until N are ready. */
static void send_part(serve_conn *c)
{
    serve_worker *s = c->srv;
    const tt_serve_faults *f = &s->cfg.faults;
    size_t k = c->part_next, nparts = c->part_n_cuts + 1;
    size_t from = k ? c->part_cuts[k - 1] : 0, to = k + 1 < nparts ? c->part_cuts[k] : c->part_frame.len;
    bool first = k == 0, final = k + 1 == nparts;
    bool last_event = c->part_index + 1 == c->plan_n;
    char pre[24];
    size_t pre_len = 0;
    const char *post = "";
    if (c->chunked) {
        if (first) pre_len = (size_t)snprintf(pre, sizeof pre, "%zx\r\n", c->part_frame.len);
        if (final) post = last_event && !c->abort_at_end ? "\r\n0\r\n\r\n" : "\r\n";
    }
    tt_serve_conn_append(c, c->q_head, (int32_t)c->part_index, tt_serve_event_kind_name(c->part_ev.kind), false, pre,
                pre_len, c->part_frame.p + from, to - from, post, strlen(post));
    if (c->out.oom) { tt_serve_conn_kill(c); return; }
    if (!final) c->segs[c->seg_n - 1].partial = true;
    c->part_next++;
    if (!final) {
        uint64_t t = tt_serve_mono_ns();
        tt_serve_conn_flush_at(c, t);
        c->part_due = t + f->split_pause_ns;
        return;
    }
    c->part_active = false;
    c->held++;
    if (!tt_coalesce_due(f->coalesce, c->held, last_event)) return;
    uint64_t t = tt_serve_mono_ns();
    tt_serve_conn_flush_at(c, t);
    for (size_t i = c->held_from; i < c->held_from + c->held && i < c->plan_n; i++)
        note_emission(c, &c->plan[i], t, i + 1 == c->plan_n);
    c->held = 0;
}

/* A keep-alive: sse-starlette's ping comment, or Anthropic's ping event. */
static void send_keepalive(serve_conn *c)
{
    serve_worker *s = c->srv;
    tt_sbuf frame = {0};
    if (s->cfg.profile->id == TT_PROFILE_ANTHROPIC) {
        tt_sbuf_puts(&frame, "event: ping\ndata: {\"type\": \"ping\"}");
    } else {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        time_t secs = ts.tv_sec;
        struct tm tm;
        char when[40] = "1970-01-01 00:00:00";
        if (gmtime_r(&secs, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm);
        tt_sbuf_printf(&frame, ": ping - %s.%06ld+00:00", when, ts.tv_nsec / 1000);
    }
    tt_sbuf_puts(&frame, s->cfg.profile->separator);
    char pre[24];
    size_t pre_len = 0;
    if (c->chunked) pre_len = (size_t)snprintf(pre, sizeof pre, "%zx\r\n", frame.len);
    if (frame.oom) { tt_sbuf_free(&frame); tt_serve_conn_kill(c); return; }
    tt_serve_conn_append(c, c->q_head, SEG_KEEPALIVE, "keepalive", false, pre, pre_len, frame.p, frame.len,
                c->chunked ? "\r\n" : "", c->chunked ? 2 : 0);
    tt_sbuf_free(&frame);
    if (c->out.oom) { tt_serve_conn_kill(c); return; }
    tt_serve_conn_flush(c);
}

static bool is_due(uint64_t due, uint64_t *now)
{
    if (due <= *now) return true;
    *now = tt_serve_mono_ns();
    return due <= *now;
}

static void wake_at(serve_conn *c, uint64_t due)
{
    if (tt_heap_set(&c->srv->heap, &c->timer, due) != 0) tt_serve_conn_kill(c);
}

/* Emit every event (part, keep-alive) of the active stream due by now; re-arm for the next. */
void tt_serve_emit_due(serve_conn *c, uint64_t now)
{
    serve_worker *s = c->srv;
    const tt_serve_faults *f = &s->cfg.faults;
    while (c->active && !c->dead) {
        if (c->part_active) {
            if (!is_due(c->part_due, &now)) { wake_at(c, c->part_due); return; }
            send_part(c);
            continue;
        }
        if (c->plan_next == c->plan_n) break;
        if (f->keepalive_ns && is_due(c->keepalive_due, &now)) {
            send_keepalive(c);
            while (c->keepalive_due <= now) c->keepalive_due += f->keepalive_ns;
            continue;
        }
        const tt_serve_event *ev = &c->plan[c->plan_next];
        bool before_first = ev->kind == TT_SEV_ROLE || (ev->kind == TT_SEV_META && !c->first_token_at);
        bool timed = before_first || ev->kind == TT_SEV_TOKEN || ev->kind == TT_SEV_ERROR;
        if (timed && !is_due(c->token_due, &now)) {
            uint64_t due = c->token_due;
            if (f->keepalive_ns && c->keepalive_due < due) due = c->keepalive_due;
            wake_at(c, due);
            return;
        }
        start_event(c, c->plan_next);
        if (c->dead) return;
        c->plan_next++;
        if (ev->kind == TT_SEV_TOKEN) c->token_due += tt_dist_draw(&s->cfg.itl, &c->rng, &c->itl_cursor);
    }
    if (!c->active || c->dead || c->plan_next != c->plan_n || c->part_active) return;
    bool abort = c->abort_at_end;
    if (abort) {
        tt_sbuf *b = tt_serve_log_begin(s->log);
        if (b) {
            tt_sbuf_puts(b, "{\"type\":\"close\",\"mono_ns\":");
            tt_sbuf_u64(b, tt_serve_mono_ns());
            tt_sbuf_puts(b, ",\"peer\":");
            tt_sbuf_json_str(b, c->peer, strlen(c->peer));
            tt_sbuf_printf(b, ",\"ordinal\":%u,\"reason\":\"close-after\",\"tokens\":%lld}\n",
                           c->q_head ? c->q_head->ordinal : 0, (long long)f->close_after);
            tt_serve_log_commit(s->log);
        }
    }
    finish_response(c);
    if (abort) {
        c->close_when_drained = true;
        tt_serve_conn_update_events(c, false, c->want_out);
    }
}

/* --status: every generation answered with this error, in the profile's error shape. */
static void send_fault_status(serve_conn *c, serve_req *r, int status)
{
    tt_serve_profile_id id = c->srv->cfg.profile->id;
    const char *type = status == 429 ? "rate_limit_error" : status == 529 || status == 503 ? "overloaded_error"
                     : status >= 500 ? "api_error" : "invalid_request_error";
    char msg[64];
    snprintf(msg, sizeof msg, "synthetic error status %d", status);
    tt_sbuf body = {0};
    if (id == TT_PROFILE_ANTHROPIC)
        tt_sbuf_printf(&body, "{\"type\":\"error\",\"error\":{\"type\":\"%s\",\"message\":\"%s\"}}", type, msg);
    else if (id == TT_PROFILE_TGI)
        tt_sbuf_printf(&body, "{\"error\":\"%s\",\"error_type\":\"%s\"}", msg, status == 429 ? "overloaded" : "generation");
    else if (id == TT_PROFILE_OLLAMA)
        tt_sbuf_printf(&body, "{\"error\":\"%s\"}", msg);
    else
        tt_sbuf_printf(&body, "{\"error\":{\"message\":\"%s\",\"type\":\"%s\",\"param\":null,\"code\":%d}}", msg, type, status);
    if (body.oom) { tt_sbuf_free(&body); tt_serve_conn_kill(c); return; }
    send_simple(c, r, status, "application/json", body.p, body.len, false, NULL);
    tt_sbuf_free(&body);
}

static void start_response(serve_conn *c, serve_req *r)
{
    serve_worker *s = c->srv;
    bool is_post = !strcmp(r->method, "POST"), is_get = !strcmp(r->method, "GET");
    char msg[256];
    c->active = false;
    if (r->path_too_long) {
        send_error(c, r, 404, "not_found_error", "no such path", false);
        return;
    }
    tt_serve_api api = TT_API_CHAT;
    int route = tt_serve_route(s->cfg.profile, r->path, &api);
    if (route < 0) {
        snprintf(msg, sizeof msg, "profile %s does not serve %.200s", s->cfg.profile->name, r->path);
        send_error(c, r, 404, "not_found_error", msg, false);
        return;
    }
    if (route > 0) {
        if (!is_post) {
            send_error(c, r, 405, "invalid_request_error", "use POST", false);
            return;
        }
        if (r->body_too_large) {
            snprintf(msg, sizeof msg, "request body over %zu bytes", s->cfg.max_body);
            send_error(c, r, 413, "invalid_request_error", msg, false);
            return;
        }
        if (s->cfg.faults.status) {
            send_fault_status(c, r, s->cfg.faults.status);
            return;
        }
        uint64_t ord = (uint64_t)atomic_fetch_add(&s->server->request_counter, 1) + 1;
        c->generation_number = ord;
        tt_prng_seed(&c->rng, s->cfg.seed, ord);
        uint64_t rid = tt_prng_next(&c->rng);
        if (tt_serve_request_parse(s->cfg.profile, api,
                                   r->body.p ? r->body.p : "", r->body.len, &s->cfg.gen,
                                   r->request_id, rid, (int64_t)time(NULL), &c->params, msg,
                                   sizeof msg) != 0) {
            send_error(c, r, 400, "invalid_request_error", msg, false);
            return;
        }
        if (c->params.stream) {
            start_stream(c, r);
            return;
        }
        tt_sbuf body = {0};
        tt_serve_full_body(s->cfg.profile, &c->params, &body);
        if (body.oom) { tt_sbuf_free(&body); tt_serve_conn_kill(c); return; }
        send_simple(c, r, 200, "application/json", body.p, body.len, false, &c->params);
        tt_sbuf_free(&body);
        return;
    }
    if (!strcmp(r->path, "/v1/models") || !strcmp(r->path, "/health") || !strcmp(r->path, "/metrics")) {
        if (!is_get) {
            send_error(c, r, 405, "invalid_request_error", "use GET", false);
            return;
        }
        if (r->path[1] == 'h') {
            send_simple(c, r, 200, NULL, "", 0, false, NULL);
            return;
        }
        if (r->path[1] == 'm') {
            tt_sbuf text = {0};
            tt_serve_metrics all;
            tt_serve_metrics_init(&all);
            for (unsigned w = 0; w < s->server->n_workers; w++) {
                serve_worker *sw = s->server->workers[w];
                pthread_mutex_lock(&sw->metrics_lock);
                tt_serve_metrics_add(&all, &sw->metrics);
                pthread_mutex_unlock(&sw->metrics_lock);
            }
            tt_serve_metrics_render(&all, s->cfg.gen.model, &text);
            if (text.oom) { tt_sbuf_free(&text); tt_serve_conn_kill(c); return; }
            send_simple(c, r, 200, "text/plain; version=0.0.4; charset=utf-8", text.p, text.len, false, NULL);
            tt_sbuf_free(&text);
            return;
        }
        tt_sbuf body = {0};
        tt_sbuf_puts(&body, "{\"object\":\"list\",\"data\":[{\"id\":");
        tt_sbuf_json_str(&body, s->cfg.gen.model, strlen(s->cfg.gen.model));
        tt_sbuf_puts(&body, ",\"object\":\"model\",\"owned_by\":\"tokentap\"}]}");
        send_simple(c, r, 200, "application/json", body.p, body.len, false, NULL);
        tt_sbuf_free(&body);
        return;
    }
    snprintf(msg, sizeof msg, "no route for %s %.200s", r->method, r->path);
    send_error(c, r, 404, "not_found_error", msg, false);
}

/* Answer queued requests in order while none is streaming. */
void tt_serve_conn_pump(serve_conn *c)
{
    if (c->h2) { tt_serve_h2_pump(c); return; }
    while (!c->dead && !c->active && c->q_head && !c->close_when_drained) start_response(c, c->q_head);
    if (c->dead) return;
    if (!c->active && !c->q_head && c->parse_failed && !c->error_sent && !c->close_when_drained) {
        c->error_sent = true;
        serve_req *r = calloc(1, sizeof *r);
        if (!r) { tt_serve_conn_kill(c); return; }
        r->ordinal = ++c->next_ordinal;
        snprintf(r->method, sizeof r->method, "-");
        snprintf(r->path, sizeof r->path, "-");
        r->read_ns = tt_serve_mono_ns();
        c->q_head = c->q_tail = r;
        c->q_len = 1;
        send_error(c, r, 400, "invalid_request_error", "malformed HTTP request", true);
    }
    if (!c->active && !c->q_head && c->read_eof) c->close_when_drained = true;
    if (c->close_when_drained && !c->active && c->out.len == 0) tt_serve_conn_kill(c);
}
