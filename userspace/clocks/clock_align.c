/* clock_align.c - the offset and skew between two clocks from one-way
 * bounds (clock_align.h). With the skew s fixed, every bound is a line in
 * the offset: the allowed offsets at x = t - t0 are [L(s,x), U(s,x)] with
 *   L(s,x) = max_i (l_i - s (x_i - x)),  U(s,x) = min_j (u_j - s (x_j - x)).
 * L is convex in s, U concave, and the band U - L does not depend on x: it
 * is concave in s. So the fit (the widest band), the skews allowed (band
 * >= 0) and the extreme offsets (min L, max U over those skews) are each a
 * search over one concave or convex function of s, evaluated over the
 * bounds' convex hulls only (the rest are never the tightest). */
#include <math.h>
#include <stdlib.h>

#include "clocks/clock_align.h"

typedef struct bound {
    double x;   /* t - t0, ns (S's clock) */
    double v;   /* the bound on the offset there */
} bound;

typedef struct bound_set {
    bound *b;
    size_t n, cap;
} bound_set;

struct tt_clock_align {
    int64_t t0;
    bound_set lower, upper;
    /* the bounds that can be tightest for some skew: the upper convex hull
     * of the lower bounds (x, v), the lower convex hull of the upper ones;
     * rebuilt by tt_clock_align_fit */
    bound_set lower_hull, upper_hull;
};

#define SEARCH_STEPS 100

tt_clock_align *tt_clock_align_new(int64_t t0_ns)
{
    tt_clock_align *ca = calloc(1, sizeof *ca);
    if (ca) ca->t0 = t0_ns;
    return ca;
}

void tt_clock_align_free(tt_clock_align *ca)
{
    if (!ca) return;
    free(ca->lower.b);
    free(ca->upper.b);
    free(ca->lower_hull.b);
    free(ca->upper_hull.b);
    free(ca);
}

static int add(bound_set *s, double x, double v)
{
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        bound *n = realloc(s->b, cap * sizeof *n);
        if (!n) return -1;
        s->b = n;
        s->cap = cap;
    }
    s->b[s->n++] = (bound){x, v};
    return 0;
}

int tt_clock_align_r_to_s(tt_clock_align *ca, int64_t r_send_ns, int64_t s_recv_ns)
{
    return add(&ca->lower, (double)(s_recv_ns - ca->t0), (double)(r_send_ns - s_recv_ns));
}

int tt_clock_align_s_to_r(tt_clock_align *ca, int64_t s_send_ns, int64_t r_recv_ns)
{
    return add(&ca->upper, (double)(s_send_ns - ca->t0), (double)(r_recv_ns - s_send_ns));
}

/* L(s, x) and U(s, x) */
static double lower_env(const bound_set *l, double s, double x)
{
    double m = -INFINITY;
    for (size_t i = 0; i < l->n; i++) {
        double v = l->b[i].v - s * (l->b[i].x - x);
        if (v > m) m = v;
    }
    return m;
}

static double upper_env(const bound_set *u, double s, double x)
{
    double m = INFINITY;
    for (size_t i = 0; i < u->n; i++) {
        double v = u->b[i].v - s * (u->b[i].x - x);
        if (v < m) m = v;
    }
    return m;
}

static double band(const tt_clock_align *ca, double s)
{
    return upper_env(&ca->upper_hull, s, 0) - lower_env(&ca->lower_hull, s, 0);
}

static int by_x(const void *a, const void *b)
{
    const bound *p = a, *q = b;
    if (p->x != q->x) return p->x < q->x ? -1 : 1;
    return (p->v > q->v) - (p->v < q->v);
}

/* The hull of set into hull: for each skew s, max (sign 1) or min (sign
 * -1) of v - s x is reached at a vertex of the upper (lower) convex hull
 * of the points (x, v). Monotone chain over the points sorted by x. */
static int hull_of(const bound_set *set, bound_set *hull, double sign)
{
    hull->n = 0;
    if (!set->n) return 0;
    bound *pts = malloc(set->n * sizeof *pts);
    if (!pts) return -1;
    for (size_t i = 0; i < set->n; i++) pts[i] = (bound){set->b[i].x, sign * set->b[i].v};
    qsort(pts, set->n, sizeof *pts, by_x);
    for (size_t i = 0; i < set->n; i++) {
        /* keep the upper hull of (x, sign*v): drop the last point while it lies on or below the chord */
        while (hull->n >= 2) {
            bound a = hull->b[hull->n - 2], b = hull->b[hull->n - 1], c = pts[i];
            double cross = (b.x - a.x) * (c.v - a.v) - (b.v - a.v) * (c.x - a.x);
            if (cross < 0) break;
            hull->n--;
        }
        if (hull->n && hull->b[hull->n - 1].x == pts[i].x) hull->n--; /* same x: the larger sign*v wins (sorted) */
        if (add(hull, pts[i].x, pts[i].v) < 0) {
            free(pts);
            return -1;
        }
    }
    for (size_t i = 0; i < hull->n; i++) hull->b[i].v *= sign;
    free(pts);
    return 0;
}

/* The argument of the maximum of a concave f (sign 1) or the minimum of a
 * convex one (sign -1) over [a, b], by ternary search. */
typedef double (*env_fn)(const tt_clock_align *ca, double s, double x);

static double env_lower(const tt_clock_align *ca, double s, double x)
{
    return lower_env(&ca->lower_hull, s, x);
}

static double env_upper(const tt_clock_align *ca, double s, double x)
{
    return upper_env(&ca->upper_hull, s, x);
}

static double env_band(const tt_clock_align *ca, double s, double x)
{
    (void)x;
    return band(ca, s);
}

static double extremum(const tt_clock_align *ca, env_fn f, double sign, double x, double a, double b)
{
    for (int i = 0; i < SEARCH_STEPS; i++) {
        double m1 = a + (b - a) / 3, m2 = b - (b - a) / 3;
        if (sign * f(ca, m1, x) < sign * f(ca, m2, x)) a = m1;
        else b = m2;
    }
    return (a + b) / 2;
}

/* The edge of {s : band(s) >= 0} between inside (band >= 0) and outside. */
static double edge(const tt_clock_align *ca, double inside, double outside)
{
    if (band(ca, outside) >= 0) return outside;
    for (int i = 0; i < SEARCH_STEPS; i++) {
        double mid = (inside + outside) / 2;
        if (band(ca, mid) >= 0) inside = mid;
        else outside = mid;
    }
    return inside;
}

int tt_clock_align_fit(tt_clock_align *ca, tt_clock_fit *fit)
{
    *fit = (tt_clock_fit){.t0_ns = ca->t0, .n_lower = ca->lower.n, .n_upper = ca->upper.n};
    if (hull_of(&ca->lower, &ca->lower_hull, 1) < 0 || hull_of(&ca->upper, &ca->upper_hull, -1) < 0) return -1;
    if (!ca->lower.n && !ca->upper.n) {
        fit->status = TT_CLOCK_FIT_NONE;
        return 0;
    }
    if (!ca->lower.n || !ca->upper.n) {
        /* the one side's tightest bound at no skew: a limit, not an estimate */
        fit->status = TT_CLOCK_FIT_ONE_SIDED;
        fit->offset_ns = ca->lower.n ? lower_env(&ca->lower_hull, 0, 0) : upper_env(&ca->upper_hull, 0, 0);
        fit->lo_ns = ca->lower.n ? fit->offset_ns : -INFINITY;
        fit->hi_ns = ca->upper.n ? fit->offset_ns : INFINITY;
        fit->uncertainty_ns = INFINITY;
        return 0;
    }
    double smax = TT_CLOCK_MAX_SKEW_PPM * 1e-6;
    double s = extremum(ca, env_band, 1, 0, -smax, smax);
    double width = band(ca, s);
    fit->skew_ppm = s * 1e6;
    fit->offset_ns = (upper_env(&ca->upper_hull, s, 0) + lower_env(&ca->lower_hull, s, 0)) / 2;
    if (width < 0) {
        fit->status = TT_CLOCK_FIT_CONTRADICTION;
        fit->worst_violation_ns = -width / 2;
        fit->lo_ns = fit->hi_ns = fit->offset_ns;
        return 0;
    }
    fit->status = TT_CLOCK_FIT_OK;
    double s_lo = edge(ca, s, -smax), s_hi = edge(ca, s, smax);
    fit->skew_lo_ppm = s_lo * 1e6;
    fit->skew_hi_ppm = s_hi * 1e6;
    tt_clock_align_offset_at(ca, fit, ca->t0, &fit->lo_ns, &fit->hi_ns);
    double below = fit->offset_ns - fit->lo_ns, above = fit->hi_ns - fit->offset_ns;
    fit->uncertainty_ns = below > above ? below : above;
    return 0;
}

double tt_clock_align_offset_at(const tt_clock_align *ca, const tt_clock_fit *fit, int64_t t_ns, double *lo_ns,
                                double *hi_ns)
{
    double x = (double)(t_ns - ca->t0);
    double s_lo = fit->skew_lo_ppm * 1e-6, s_hi = fit->skew_hi_ppm * 1e-6;
    if (lo_ns) {
        double s = extremum(ca, env_lower, -1, x, s_lo, s_hi);
        *lo_ns = lower_env(&ca->lower_hull, s, x);
    }
    if (hi_ns) {
        double s = extremum(ca, env_upper, 1, x, s_lo, s_hi);
        *hi_ns = upper_env(&ca->upper_hull, s, x);
    }
    return fit->offset_ns + fit->skew_ppm * 1e-6 * x;
}
