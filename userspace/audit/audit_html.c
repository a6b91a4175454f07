/* audit_html.c - the audit's report card as one self-contained HTML5 page
 * (docs/audit.md, `--html`): the header, the table of cells, the causes,
 * and three inline SVG plots drawn here. No script, no external resource
 * of any kind (no URL at all: inline SVG needs no xmlns in HTML5), so the
 * page shows the same offline and cannot throw. Every number written into
 * SVG passes through isfinite(); large samples are downsampled so the page
 * stays small. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit/audit.h"

#define SCATTER_MAX_POINTS 2000 /* plot (a), over all cells */
#define CDF_MAX_POINTS 400      /* plot (c), per curve */
#define MAX_TICKS 16

/* ---- text ---- */

/* Write at most max bytes of s (stops at NUL) HTML-escaped; control bytes
 * become '?' (numeric references to them are parse errors). */
static void put_esc_n(FILE *out, const char *s, size_t max)
{
    for (size_t i = 0; i < max && s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        switch (ch) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(ch < 0x20 && ch != '\t' && ch != '\n' ? '?' : ch, out);
        }
    }
}
#define put_esc(out, field) put_esc_n((out), (field), sizeof(field))

/* ns -> "+1.234" ms (signed) or "1.234"; "n/a" when not finite. */
static const char *fmt_ms(char *buf, size_t len, double ns, int sign)
{
    double ms = ns / 1e6;
    if (!isfinite(ms)) snprintf(buf, len, "n/a");
    else if (fabs(ms) >= 1e9) snprintf(buf, len, sign ? "%+.4g" : "%.4g", ms);
    else snprintf(buf, len, sign ? "%+.3f" : "%.3f", ms);
    return buf;
}

/* %g of a card value, "?" when not finite. */
static const char *fmt_g(char *buf, size_t len, double v)
{
    if (isfinite(v)) snprintf(buf, len, "%g", v);
    else snprintf(buf, len, "?");
    return buf;
}

/* An int64 count that may be -1 (unknown). */
static void put_count(FILE *out, int64_t v)
{
    if (v < 0) fputs("?", out);
    else fprintf(out, "%lld", (long long)v);
}

/* ---- colours ---- */

/* The i-th series colour: Tableau 10, then golden-angle hues. */
static void colour(char *buf, size_t len, size_t i)
{
    static const char *const pal[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
    if (i < sizeof pal / sizeof pal[0]) snprintf(buf, len, "%s", pal[i]);
    else snprintf(buf, len, "hsl(%u,60%%,42%%)", (unsigned)((i * 137u) % 360u));
}

/* ---- plot geometry ---- */

typedef struct plot {
    FILE *out;
    double x0, x1, y0, y1;   /* data range */
    double left, top, w, h;  /* plot area, px */
} plot;

/* A coordinate: one decimal, clamped, never nan/inf. */
static void put_px(FILE *out, double v)
{
    if (!isfinite(v)) v = 0;
    if (v > 1e5) v = 1e5;
    if (v < -1e5) v = -1e5;
    fprintf(out, "%.1f", v);
}

/* ` name="v"` with v a coordinate. */
static void put_attr(FILE *out, const char *name, double v)
{
    fprintf(out, " %s=\"", name);
    put_px(out, v);
    fputc('"', out);
}

static double plot_x(const plot *p, double x) { return p->left + (x - p->x0) / (p->x1 - p->x0) * p->w; }
static double plot_y(const plot *p, double y) { return p->top + p->h - (y - p->y0) / (p->y1 - p->y0) * p->h; }

/* Make [lo, hi] a usable, finite, non-empty range. */
static void range_fix(double *lo, double *hi)
{
    if (!isfinite(*lo) || !isfinite(*hi) || *lo > *hi) *lo = 0, *hi = 1;
    if (*hi - *lo <= fabs(*hi) * 1e-9) {
        double pad = fabs(*lo) > 0 ? fabs(*lo) * 0.1 : 1;
        *lo -= pad, *hi += pad;
    }
}

/* Round [lo, hi] out to a nice step; the ticks in t (up to MAX_TICKS);
 * returns their count and the step in *step. */
static int nice_ticks(double *lo, double *hi, int want, double *t, double *step)
{
    range_fix(lo, hi);
    double raw = (*hi - *lo) / (want > 0 ? want : 1), mag = pow(10, floor(log10(raw))), f = raw / mag;
    double s = (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
    double a = floor(*lo / s) * s, b = ceil(*hi / s) * s;
    if (isfinite(a) && isfinite(b) && b > a) *lo = a, *hi = b;
    int n = 0;
    for (int i = 0; n < MAX_TICKS; i++) {
        double v = *lo + i * s;
        if (v > *hi + s * 1e-6) break;
        t[n++] = fabs(v) < s * 1e-9 ? 0 : v;
    }
    *step = s;
    return n;
}

/* A tick label: decimals from the step, %g for huge values. */
static void fmt_tick(char *buf, size_t len, double v, double step)
{
    if (!isfinite(v)) snprintf(buf, len, "?");
    else if (fabs(v) >= 1e7) snprintf(buf, len, "%.4g", v);
    else {
        int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
        snprintf(buf, len, "%.*f", dec > 6 ? 6 : dec, v);
    }
}

/* Open an <svg> of w x h with an accessible title. */
static void svg_open(FILE *out, int w, int h, const char *title)
{
    fprintf(out, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" class=\"plot\"><title>", w, h,
            w, h);
    put_esc_n(out, title, strlen(title));
    fputs("</title>\n", out);
}

static void svg_text(FILE *out, double x, double y, const char *anchor, const char *cls, const char *s)
{
    fputs("<text", out);
    put_attr(out, "x", x);
    put_attr(out, "y", y);
    fprintf(out, " text-anchor=\"%s\" class=\"%s\">", anchor, cls);
    put_esc_n(out, s, strlen(s));
    fputs("</text>\n", out);
}

/* The box around the plot area. */
static void svg_frame(const plot *p)
{
    fputs("<rect class=\"frame\"", p->out);
    put_attr(p->out, "x", p->left);
    put_attr(p->out, "y", p->top);
    put_attr(p->out, "width", p->w);
    put_attr(p->out, "height", p->h);
    fputs("/>\n", p->out);
}

/* "no samples" (or another word) in the middle of the plot area. */
static void svg_empty(const plot *p, const char *why)
{
    svg_frame(p);
    svg_text(p->out, p->left + p->w / 2, p->top + p->h / 2, "middle", "empty", why);
}

static void svg_line(FILE *out, double x1, double y1, double x2, double y2, const char *cls)
{
    fputs("<line", out);
    put_attr(out, "x1", x1);
    put_attr(out, "y1", y1);
    put_attr(out, "x2", x2);
    put_attr(out, "y2", y2);
    fprintf(out, " class=\"%s\"/>\n", cls);
}

/* Axes with grid and tick labels. The y range (and the x range unless
 * xcat) is rounded out to nice ticks first, about xticks of them. xcat:
 * ncat categorical x labels at 0..ncat-1 instead of numeric ticks. */
static void svg_axes(plot *p, const char *xlabel, const char *ylabel, int xticks, const char *const *xcat,
                     size_t ncat)
{
    double t[MAX_TICKS], step;
    char buf[48];
    int n = nice_ticks(&p->y0, &p->y1, 5, t, &step);
    for (int i = 0; i < n; i++) {
        double y = plot_y(p, t[i]);
        svg_line(p->out, p->left, y, p->left + p->w, y, t[i] == 0 ? "zero" : "grid");
        fmt_tick(buf, sizeof buf, t[i], step);
        svg_text(p->out, p->left - 6, y + 4, "end", "tick", buf);
    }
    if (xcat) {
        for (size_t i = 0; i < ncat; i++) {
            double x = plot_x(p, (double)i);
            svg_line(p->out, x, p->top, x, p->top + p->h, "grid");
            svg_text(p->out, x, p->top + p->h + 16, "middle", "tick", xcat[i]);
        }
    } else {
        n = nice_ticks(&p->x0, &p->x1, xticks, t, &step);
        for (int i = 0; i < n; i++) {
            double x = plot_x(p, t[i]);
            svg_line(p->out, x, p->top, x, p->top + p->h, "grid");
            fmt_tick(buf, sizeof buf, t[i], step);
            svg_text(p->out, x, p->top + p->h + 16, "middle", "tick", buf);
        }
    }
    svg_frame(p);
    svg_text(p->out, p->left + p->w / 2, p->top + p->h + 36, "middle", "label", xlabel);
    double ly = p->top + p->h / 2;
    fputs("<text class=\"label\" text-anchor=\"middle\" transform=\"translate(", p->out);
    put_px(p->out, p->left - 46);
    fputc(',', p->out);
    put_px(p->out, ly);
    fputs(") rotate(-90)\">", p->out);
    put_esc_n(p->out, ylabel, strlen(ylabel));
    fputs("</text>\n", p->out);
}

/* One legend entry at (x, y): a swatch (dot, line or dashed line) and a label. */
static void svg_legend_entry(FILE *out, double x, double y, const char *col, const char *kind, const char *label)
{
    if (!strcmp(kind, "dot")) {
        fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"%s\"/>\n", x + 8, y - 4, col);
    } else {
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
                x, y - 4, x + 18, y - 4, col, !strcmp(kind, "dash") ? " stroke-dasharray=\"5 3\"" : "");
    }
    svg_text(out, x + 24, y, "start", "legend", label);
}

static void cell_label(char *buf, size_t len, const tt_audit_cell *c)
{
    snprintf(buf, len, "%.*s c=%u", (int)sizeof c->profile, c->profile, c->concurrency);
}

/* ---- plot (a): reported minus true TTFT per request ---- */

/* Draw the points of one cell with stride; the minimum and maximum are
 * always kept so that downsampling hides no outlier. */
static void scatter_cell(const plot *p, const tt_audit_cell *c, size_t stride, const char *col)
{
    size_t imin = 0, imax = 0;
    for (size_t i = 1; i < c->n_ttft_err; i++) {
        if (c->ttft_err_ns[i] < c->ttft_err_ns[imin]) imin = i;
        if (c->ttft_err_ns[i] > c->ttft_err_ns[imax]) imax = i;
    }
    fprintf(p->out, "<g fill=\"%s\" fill-opacity=\"0.75\">\n", col);
    for (size_t i = 0; i < c->n_ttft_err; i++) {
        if (i % stride && i != imin && i != imax) continue;
        fputs("<circle r=\"2.5\"", p->out);
        put_attr(p->out, "cx", plot_x(p, (double)i));
        put_attr(p->out, "cy", plot_y(p, (double)c->ttft_err_ns[i] / 1e6));
        fputs("/>", p->out);
        if (i % 8 == 7) fputc('\n', p->out);
    }
    fputs("</g>\n", p->out);
}

static void plot_ttft_scatter(FILE *out, const tt_audit_card *card)
{
    size_t total = 0, nmax = 0;
    double lo = 0, hi = 0; /* 0 always on the axis */
    for (size_t k = 0; k < card->n_cells; k++) {
        const tt_audit_cell *c = &card->cells[k];
        if (!c->ttft_err_ns) continue;
        total += c->n_ttft_err;
        if (c->n_ttft_err > nmax) nmax = c->n_ttft_err;
        for (size_t i = 0; i < c->n_ttft_err; i++) {
            double v = (double)c->ttft_err_ns[i] / 1e6;
            if (v < lo) lo = v;
            if (v > hi) hi = v;
        }
    }
    size_t stride = total > SCATTER_MAX_POINTS ? (total + SCATTER_MAX_POINTS - 1) / SCATTER_MAX_POINTS : 1;
    int h = 360, legend_h = 30 + (int)card->n_cells * 18;
    if (legend_h > h) h = legend_h;
    svg_open(out, 960, h, "Reported minus true TTFT per request");
    plot p = {out, 0, nmax > 1 ? (double)(nmax - 1) : 1, lo, hi, 70, 20, 690, 280};
    if (!total) {
        svg_empty(&p, "no samples");
    } else {
        svg_axes(&p, "request index within the run", "reported - true TTFT (ms)", 8, NULL, 0);
        char col[32], label[64];
        for (size_t k = 0; k < card->n_cells; k++) {
            const tt_audit_cell *c = &card->cells[k];
            colour(col, sizeof col, k);
            if (c->ttft_err_ns && c->n_ttft_err) scatter_cell(&p, c, stride, col);
            cell_label(label, sizeof label, c);
            if (!c->n_ttft_err) strncat(label, " (none)", sizeof label - strlen(label) - 1);
            svg_legend_entry(out, 790, 34 + 18 * (double)k, col, "dot", label);
        }
        if (stride > 1) {
            char note[80];
            snprintf(note, sizeof note, "1 request in %zu shown, and each run's min and max", stride);
            svg_text(out, p.left + p.w, 14, "end", "tick", note);
        }
    }
    fputs("</svg>\n", out);
}

/* ---- plot (b): client overhead against concurrency ---- */

static int cmp_unsigned(const void *a, const void *b)
{
    unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
    return (x > y) - (x < y);
}

/* The median (ms) of one overhead of the cell (profile, conc); NAN when none. */
static double overhead_at(const tt_audit_card *card, const char *profile, unsigned conc, int send)
{
    for (size_t k = 0; k < card->n_cells; k++) {
        const tt_audit_cell *c = &card->cells[k];
        if (c->concurrency != conc || strncmp(c->profile, profile, sizeof c->profile)) continue;
        const tt_audit_overhead *o = send ? &c->send_lag : &c->client_lag;
        if (o->n && isfinite(o->median)) return o->median / 1e6;
    }
    return NAN;
}

/* One profile's line of one overhead over the concurrency categories, with
 * a marker per run (filled: client lag, hollow: send lag). */
static void overhead_line(const plot *p, const tt_audit_card *card, const char *profile, const unsigned *conc,
                          size_t nconc, int send, const char *col)
{
    int pen_down = 0;
    fprintf(p->out, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s d=\"", col,
            send ? " stroke-dasharray=\"6 4\"" : "");
    for (size_t j = 0; j < nconc; j++) {
        double v = overhead_at(card, profile, conc[j], send);
        if (!isfinite(v)) continue;
        fputc(pen_down ? 'L' : 'M', p->out);
        put_px(p->out, plot_x(p, (double)j));
        fputc(',', p->out);
        put_px(p->out, plot_y(p, v));
        pen_down = 1;
    }
    fputs("\"/>\n", p->out);
    fprintf(p->out, "<g stroke=\"%s\" stroke-width=\"1.5\" fill=\"%s\">", col, send ? "#fff" : col);
    for (size_t j = 0; j < nconc; j++) {
        double v = overhead_at(card, profile, conc[j], send);
        if (!isfinite(v)) continue;
        fputs("<circle r=\"3.5\"", p->out);
        put_attr(p->out, "cx", plot_x(p, (double)j));
        put_attr(p->out, "cy", plot_y(p, v));
        fputs("/>", p->out);
    }
    fputs("</g>\n", p->out);
}

static void plot_overhead(FILE *out, const tt_audit_card *card)
{
    size_t n = card->n_cells, nconc = 0, nprof = 0, npoints = 0;
    unsigned *conc = calloc(n + 1, sizeof *conc);
    const char **prof = calloc(n + 1, sizeof *prof);
    double lo = 0, hi = 0;
    for (size_t k = 0; conc && prof && k < n; k++) {
        const tt_audit_cell *c = &card->cells[k];
        size_t j = 0;
        while (j < nconc && conc[j] != c->concurrency) j++;
        if (j == nconc) conc[nconc++] = c->concurrency;
        for (j = 0; j < nprof && strncmp(prof[j], c->profile, sizeof c->profile); j++) {}
        if (j == nprof) prof[nprof++] = c->profile;
        const tt_audit_overhead *o[2] = {&c->client_lag, &c->send_lag};
        for (int m = 0; m < 2; m++) {
            if (!o[m]->n || !isfinite(o[m]->median)) continue;
            npoints++;
            if (o[m]->median / 1e6 > hi) hi = o[m]->median / 1e6;
            if (o[m]->median / 1e6 < lo) lo = o[m]->median / 1e6;
        }
    }
    if (conc) qsort(conc, nconc, sizeof *conc, cmp_unsigned);
    int h = 340, legend_h = 70 + (int)nprof * 18;
    if (legend_h > h) h = legend_h;
    svg_open(out, 960, h, "Client overhead against concurrency");
    plot p = {out, -0.5, nconc > 0 ? (double)nconc - 0.5 : 0.5, lo, hi, 70, 20, 690, 260};
    if (!npoints) {
        svg_empty(&p, conc && prof ? "no samples" : "out of memory");
    } else {
        char (*labels)[16] = calloc(nconc, sizeof *labels);
        const char **lp = calloc(nconc, sizeof *lp);
        for (size_t j = 0; labels && lp && j < nconc; j++) {
            snprintf(labels[j], sizeof labels[j], "%u", conc[j]);
            lp[j] = labels[j];
        }
        svg_axes(&p, "concurrency (categorical)", "median overhead (ms)", 0, lp, labels && lp ? nconc : 0);
        free(labels);
        free(lp);
        char col[32];
        for (size_t i = 0; i < nprof; i++) {
            char name[24];
            colour(col, sizeof col, i);
            overhead_line(&p, card, prof[i], conc, nconc, 0, col);
            overhead_line(&p, card, prof[i], conc, nconc, 1, col);
            snprintf(name, sizeof name, "%.16s", prof[i]);
            svg_legend_entry(out, 790, 34 + 18 * (double)i, col, "dot", name);
        }
        double y = 34 + 18 * (double)nprof + 10;
        svg_legend_entry(out, 790, y, "#444", "line", "client lag (filled)");
        svg_legend_entry(out, 790, y + 18, "#444", "dash", "send lag (hollow)");
    }
    fputs("</svg>\n", out);
    free(conc);
    free(prof);
}

/* ---- plot (c): ITL distribution, reported vs true, one panel per cell ---- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The samples in ms, sorted (malloc'd); NULL when none or no memory. */
static double *sorted_ms(const int64_t *v, size_t n)
{
    if (!v || !n) return NULL;
    double *d = malloc(n * sizeof *d);
    if (!d) return NULL;
    for (size_t i = 0; i < n; i++) d[i] = (double)v[i] / 1e6;
    qsort(d, n, sizeof *d, cmp_double);
    return d;
}

/* The empirical CDF of sorted d as a step path; above CDF_MAX_POINTS
 * samples, evenly spaced quantiles joined by steps. */
static void cdf_path(const plot *p, const double *d, size_t n, const char *col, int dashed)
{
    size_t pts = n > CDF_MAX_POINTS ? CDF_MAX_POINTS : n;
    fprintf(p->out, "<path fill=\"none\" stroke=\"%s\" stroke-width=\"1.8\"%s d=\"M", col,
            dashed ? " stroke-dasharray=\"5 3\"" : "");
    put_px(p->out, plot_x(p, d[0]));
    fputc(',', p->out);
    put_px(p->out, plot_y(p, 0));
    for (size_t k = 0; k < pts; k++) {
        size_t i = pts == n ? k : (size_t)llround((double)k * (double)(n - 1) / (double)(pts - 1));
        fputc('H', p->out);
        put_px(p->out, plot_x(p, d[i]));
        fputc('V', p->out);
        put_px(p->out, plot_y(p, (double)(i + 1) / (double)n));
    }
    fputc('H', p->out);
    put_px(p->out, p->left + p->w);
    fputs("\"/>\n", p->out);
}

static void cdf_panel(FILE *out, const tt_audit_cell *c)
{
    char title[64];
    cell_label(title, sizeof title, c);
    size_t nr = c->itl_reported_ns ? c->n_itl_reported : 0, nt = c->itl_true_ns ? c->n_itl_true : 0;
    double *r = sorted_ms(c->itl_reported_ns, nr), *t = sorted_ms(c->itl_true_ns, nt);
    if (!r) nr = 0;
    if (!t) nt = 0;
    double lo = INFINITY, hi = -INFINITY;
    if (nr) lo = fmin(lo, r[0]), hi = fmax(hi, r[nr - 1]);
    if (nt) lo = fmin(lo, t[0]), hi = fmax(hi, t[nt - 1]);
    svg_open(out, 310, 250, title);
    svg_text(out, 165, 14, "middle", "ptitle", title);
    plot p = {out, lo, hi, 0, 1, 62, 22, 236, 160};
    if (!nr && !nt) {
        svg_empty(&p, "no samples");
    } else {
        svg_axes(&p, "ITL (ms)", "fraction", 4, NULL, 0);
        if (nr) cdf_path(&p, r, nr, "#4e79a7", 0);
        if (nt) cdf_path(&p, t, nt, "#e15759", 1);
        char lr[40], lt[40];
        snprintf(lr, sizeof lr, "reported (%zu)", nr);
        snprintf(lt, sizeof lt, "true (%zu)", nt);
        svg_legend_entry(out, 60, 244, "#4e79a7", "line", lr);
        svg_legend_entry(out, 180, 244, "#e15759", "dash", lt);
    }
    fputs("</svg>\n", out);
    free(r);
    free(t);
}

/* ---- the page ---- */

static const char CSS[] =
    "body{font-family:system-ui,sans-serif;margin:24px;color:#222;background:#fff}\n"
    "h1{font-size:22px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 8px}h3{font-size:15px;margin:14px 0 4px}\n"
    "code{font-family:ui-monospace,monospace;background:#f3f3f3;padding:1px 3px;word-break:break-all}\n"
    ".verdict{font-weight:bold;padding:2px 8px;border-radius:4px;color:#fff}\n"
    ".ok{background:#2e7d32}.bad{background:#c62828}.yes{color:#2e7d32;font-weight:bold}"
    ".no{color:#c62828;font-weight:bold}\n"
    ".wrap{overflow-x:auto}table{border-collapse:collapse;font-size:12px}\n"
    "th,td{border:1px solid #ccc;padding:2px 5px;text-align:right;white-space:nowrap}\n"
    "th{background:#f0f0f0;white-space:normal;max-width:76px;vertical-align:bottom}td.l{text-align:left}\n"
    "td.problem{text-align:left;white-space:normal;color:#c62828}\n"
    ".sub{color:#666;font-size:11px}.panels{display:flex;flex-wrap:wrap;gap:8px}\n"
    "svg.plot{font-size:11px;background:#fff;max-width:100%;height:auto}\n"
    "svg .grid{stroke:#e4e4e4}svg .zero{stroke:#888}svg .frame{fill:none;stroke:#444}\n"
    "svg .tick{fill:#444}svg .label{fill:#222;font-size:12px}svg .legend{fill:#222}\n"
    "svg .empty{fill:#888;font-size:14px}svg .ptitle{fill:#222;font-size:12px;font-weight:bold}\n";

static void html_header(FILE *out, const tt_audit_card *card)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>tokentap audit</title>\n<style>\n",
          out);
    fputs(CSS, out);
    fputs("</style>\n</head>\n<body>\n<h1>tokentap audit</h1>\n<p>Command: <code>", out);
    put_esc(out, card->command);
    char a[32], b[32], c[32], d[32];
    fprintf(out, "</code></p>\n<p>Schedule: TTFT %s ms, ITL %s ms, %u tokens. ", fmt_g(a, sizeof a, card->ttft_ms),
            fmt_g(b, sizeof b, card->itl_ms), card->tokens);
    fprintf(out, "Tolerance: each median error within max(%s ms, %s %% of the true median). ",
            fmt_g(c, sizeof c, card->tolerance_ms), fmt_g(d, sizeof d, card->tolerance_pct));
    fprintf(out, "Server vantage (eBPF): %s.</p>\n", card->root_vantages ? "asked" : "not asked");
    fprintf(out, "<p>Verdict: <span class=\"verdict %s\">%s</span></p>\n", card->mis_measured ? "bad" : "ok",
            card->mis_measured ? "mis-measured" : "ok");
    if (card->note[0]) {
        fputs("<p>Note: ", out);
        put_esc(out, card->note);
        fputs("</p>\n", out);
    }
}

/* "+1.234 <span>p99 +5.678</span>" or "n/a". */
static void td_stat(FILE *out, const tt_audit_stat *s)
{
    char a[48], b[48];
    if (!s->n) fputs("<td>n/a</td>", out);
    else
        fprintf(out, "<td>%s<br><span class=\"sub\">p99 %s</span></td>", fmt_ms(a, sizeof a, s->median, 1),
                fmt_ms(b, sizeof b, s->p99, 1));
}

static void td_overhead(FILE *out, const tt_audit_overhead *o)
{
    char a[48], b[48];
    if (!o->n) fputs("<td>n/a</td>", out);
    else
        fprintf(out, "<td>%s<br><span class=\"sub\">p99 %s</span></td>", fmt_ms(a, sizeof a, o->median, 0),
                fmt_ms(b, sizeof b, o->p99, 0));
}

/* The class of a table cell that shows something wrong. */
#define BAD_IF(cond) ((cond) ? " class=\"no\"" : "")

static void html_table(FILE *out, const tt_audit_card *card)
{
    fputs("<h2>Runs</h2>\n<div class=\"wrap\"><table>\n<tr><th>profile</th><th>concurrency</th><th>exit, format</th>"
          "<th>sent</th><th>server completed</th><th>reported ok</th>"
          "<th>failed but delivered</th><th>ok but undelivered</th><th>tokens reported / true</th>"
          "<th>ITL samples reported / true</th><th>TTFT error (ms)</th><th>ITL error (ms)</th>"
          "<th>TPOT error (ms)</th><th>E2EL error (ms)</th><th>send lag (ms)</th><th>downlink + queue (ms)</th>"
          "<th>client queue (ms)</th><th>client lag (ms)</th><th>within tolerance</th></tr>\n",
          out);
    if (!card->n_cells) fputs("<tr><td class=\"l\" colspan=\"19\">no runs</td></tr>\n", out);
    for (size_t k = 0; k < card->n_cells; k++) {
        const tt_audit_cell *c = &card->cells[k];
        fputs("<tr><td class=\"l\">", out);
        put_esc(out, c->profile);
        fprintf(out, "</td><td>%u</td><td class=\"l\">%d, ", c->concurrency, c->cmd_status);
        if (c->result_format[0]) put_esc(out, c->result_format);
        else fputs("none", out);
        fprintf(out, "</td><td>%zu</td><td>%zu</td><td>%zu</td><td%s>%zu</td><td%s>%zu</td><td%s>", c->requests_sent,
                c->server_completed, c->reported_ok, BAD_IF(c->failed_but_delivered), c->failed_but_delivered,
                BAD_IF(c->ok_but_undelivered), c->ok_but_undelivered,
                BAD_IF(c->tokens_reported >= 0 && c->tokens_reported != c->tokens_true));
        put_count(out, c->tokens_reported);
        fputs(" / ", out);
        put_count(out, c->tokens_true);
        fprintf(out, "</td><td%s>",
                BAD_IF(c->itl_samples_reported >= 0 && c->itl_samples_reported != c->itl_samples_true));
        put_count(out, c->itl_samples_reported);
        fputs(" / ", out);
        put_count(out, c->itl_samples_true);
        fputs("</td>", out);
        td_stat(out, &c->err_ttft);
        td_stat(out, &c->err_itl);
        td_stat(out, &c->err_tpot);
        td_stat(out, &c->err_e2el);
        td_overhead(out, &c->send_lag);
        td_overhead(out, &c->downlink);
        td_overhead(out, &c->client_queue);
        td_overhead(out, &c->client_lag);
        fprintf(out, "<td class=\"%s\">%s</td></tr>\n", c->within_tolerance ? "yes" : "no",
                c->within_tolerance ? "yes" : "no");
        if (c->cmd_problem[0]) {
            fputs("<tr><td class=\"problem\" colspan=\"19\">problem: ", out);
            put_esc(out, c->cmd_problem);
            fputs("</td></tr>\n", out);
        }
    }
    fputs("</table></div>\n", out);
}

static void html_causes(FILE *out, const tt_audit_card *card)
{
    char label[64];
    size_t none = 0;
    fputs("<h2>Causes</h2>\n", out);
    for (size_t k = 0; k < card->n_cells; k++) {
        const tt_audit_cell *c = &card->cells[k];
        if (!c->causes || !c->n_causes) continue;
        cell_label(label, sizeof label, c);
        fputs("<h3>", out);
        put_esc_n(out, label, sizeof label);
        fputs("</h3>\n<ul>\n", out);
        for (size_t i = 0; i < c->n_causes; i++) {
            const tt_audit_cause *x = &c->causes[i];
            fputs("<li><code>", out);
            if (x->finding[0]) put_esc(out, x->finding);
            else fputs("no finding", out);
            fputs("</code> ", out);
            put_esc(out, x->symptom);
            fprintf(out, " <span class=\"sub\">(%zu request%s)</span></li>\n", x->requests,
                    x->requests == 1 ? "" : "s");
        }
        fputs("</ul>\n", out);
    }
    /* the cells without a cause, on one line */
    for (size_t k = 0; k < card->n_cells; k++) {
        const tt_audit_cell *c = &card->cells[k];
        if (c->causes && c->n_causes) continue;
        cell_label(label, sizeof label, c);
        fputs(none++ ? ", " : "<p class=\"sub\">No cause named: ", out);
        put_esc_n(out, label, sizeof label);
    }
    if (none) fputs(".</p>\n", out);
    if (!card->n_cells) fputs("<p>no runs</p>\n", out);
}

int tt_audit_write_html(FILE *out, const tt_audit_card *card)
{
    html_header(out, card);
    html_table(out, card);
    html_causes(out, card);
    fputs("<h2>Reported minus true TTFT, per request</h2>\n", out);
    plot_ttft_scatter(out, card);
    fputs("<h2>Client overhead against concurrency</h2>\n<p class=\"sub\">Median per run; solid: client lag "
          "(socket read to the tool's stamp), dashed: send lag (the tool's start to its request at the "
          "socket).</p>\n",
          out);
    plot_overhead(out, card);
    fputs("<h2>ITL distribution, reported vs true</h2>\n<p class=\"sub\">Empirical CDF per run: what the tool "
          "reported (solid) against serve's token writes (dashed).</p>\n<div class=\"panels\">\n",
          out);
    for (size_t k = 0; k < card->n_cells; k++) cdf_panel(out, &card->cells[k]);
    if (!card->n_cells) {
        static const tt_audit_cell none;
        cdf_panel(out, &none);
    }
    fputs("</div>\n</body>\n</html>\n", out);
    return ferror(out) ? -1 : 0;
}
