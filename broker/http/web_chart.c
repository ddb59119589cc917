/*
 * The web view's charts, as inline SVG (no script, no library): two series against time, one on
 * each y axis, from a job's progress points (the store's) or the broker's ring (history.c), with a legend that names both, axis titles
 * clear of the ticks, and a time axis in UTC whose ticks fall on round times. A job's chart
 * ends where the job ended; a running job's at now. They scale down to a phone's width.
 */
#include "http_impl.h"

#include "u128.h"

#include <math.h>
#include <string.h>
#include <time.h>

#define CW 720                     /* the chart's size in its own units (CSS pixels at full width) */
#define CH 270
#define ML 84                      /* margins: tick labels (up to 11 digits grouped), axis titles */
#define MR 70
#define MT 40                      /* the legend's row */
#define MB 44                      /* the time ticks and the axis title */
#define BLUE "#1f5fbf"
#define ORANGE "#c15800"

typedef struct {
    const char *id, *label;            /* the <svg>'s id and aria-label */
    const char *left, *right;          /* the series' names, as the legend and the axes say them */
    double lmax, rmax;                 /* the axes' tops */
    double t0, t1;                     /* the time span */
    int running;                       /* the last point is now */
} chart_t;

static double px(const chart_t *c, double t)
{
    return ML + (c->t1 > c->t0 ? (t - c->t0) / (c->t1 - c->t0) : 1.0) * (CW - ML - MR);
}

static double py(double v, double vmax)
{
    return CH - MB - (vmax > 0 ? v / vmax : 0) * (CH - MT - MB);
}

/* The smallest of 1, 2, 4, 6, 8 times a power of ten at or above v: an axis top whose quarters,
   where the ticks are, read well too (0.25, 0.5, 1, 1.5, 2). */
static double nice_top(double v)
{
    if (!(v > 0))
        return 1;
    double p = pow(10, floor(log10(v))), m = v / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 4 ? 4 : m <= 6 ? 6 : m <= 8 ? 8 : 10) * p;
}

/* A tick value as people read it: grouped digits, or up to two decimals below 10 (1.25). */
static void tick_value(FILE *f, double v)
{
    char g[NQ_U128_GROUPED];
    if (v < 10 && v != floor(v)) {
        snprintf(g, sizeof g, "%.2f", v);
        size_t n = strlen(g);
        while (g[n - 1] == '0')
            g[--n] = '\0';
        fputs(g, f);
    } else {
        fputs(u128_group((nq_u128)(v + 0.5), g), f);
    }
}

/* Seconds between time ticks: a round step that gives about four to seven of them. */
static double time_step(double span)
{
    static const double steps[] = { 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200,
                                    10800, 21600, 43200, 86400, 172800, 604800 };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (span / steps[i] <= 6)
            return steps[i];
    return ceil(span / 6 / 604800) * 604800;
}

static void time_label(FILE *f, double t, double step)
{
    char buf[32];
    struct tm tm;
    time_t s = (time_t)t;
    if (!gmtime_r(&s, &tm))
        return;
    strftime(buf, sizeof buf, step >= 86400 ? "%m-%d" : step >= 60 ? "%H:%M" : "%H:%M:%S", &tm);
    fputs(buf, f);
}

static void legend(FILE *f, const chart_t *c)
{
    fprintf(f, "<g class=\"legend\"><line x1=\"%d\" y1=\"14\" x2=\"%d\" y2=\"14\" stroke=\"" BLUE "\" "
            "stroke-width=\"3\"/><text x=\"%d\" y=\"18\">%s (left axis)</text>",
            ML, ML + 22, ML + 28, c->left);
    fprintf(f, "<line x1=\"%d\" y1=\"14\" x2=\"%d\" y2=\"14\" stroke=\"" ORANGE "\" stroke-width=\"2\"/>"
            "<text x=\"%d\" y=\"18\">%s (right axis)</text></g>", ML + 270, ML + 292, ML + 298, c->right);
}

static void y_axes(FILE *f, const chart_t *c)
{
    for (int k = 0; k <= 4; k++) {
        double y = py(k / 4.0, 1.0);
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"%s\"/>", ML, y, CW - MR, y,
                k ? "#e3e5ea" : "#99a");
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\" fill=\"" BLUE "\">", ML - 6, y + 4);
        tick_value(f, c->lmax * k / 4);
        fprintf(f, "</text><text x=\"%d\" y=\"%.1f\" fill=\"" ORANGE "\">", CW - MR + 6, y + 4);
        tick_value(f, c->rmax * k / 4);
        fputs("</text>", f);
    }
    double mid = (MT + CH - MB) / 2.0;   /* the axis titles, turned along their axes */
    fprintf(f, "<text class=\"axis-title\" transform=\"translate(12 %.1f) rotate(-90)\" "
            "text-anchor=\"middle\" fill=\"" BLUE "\">%s</text>", mid, c->left);
    fprintf(f, "<text class=\"axis-title\" transform=\"translate(%d %.1f) rotate(90)\" "
            "text-anchor=\"middle\" fill=\"" ORANGE "\">%s</text>", CW - 8, mid, c->right);
}

/* Ticks on round UTC times, and the axis title: where the chart ends (now, or the job's end). */
static void time_axis(FILE *f, const chart_t *c)
{
    double step = time_step(c->t1 - c->t0);
    int ticks = 0;
    for (double t = ceil(c->t0 / step) * step; t <= c->t1 + 1e-9; t += step) {
        double x = px(c, t);
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#99a\"/>"
                "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
                x, CH - MB, x, CH - MB + 4, x, CH - MB + 16);
        time_label(f, t, step);
        fputs("</text>", f);
        ticks++;
    }
    if (!ticks) {                       /* a span shorter than its step: its two ends */
        fprintf(f, "<text class=\"tick\" x=\"%d\" y=\"%d\">", ML, CH - MB + 16);
        time_label(f, c->t0, 1);
        fputs("</text>", f);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time (UTC), %s ", (ML + CW - MR) / 2, CH - 6,
            c->running ? "up to now" : "to the end at");
    if (!c->running)
        time_label(f, c->t1, 1);
    fputs("</text>", f);
}

static void chart_open(FILE *f, const chart_t *c)
{
    fprintf(f, "<svg id=\"%s\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 %d %d\" "
            "width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"%s\">", c->id, CW, CH, CW, CH, c->label);
}

static void polyline(FILE *f, const char *id, const char *colour, double width)
{
    fprintf(f, "<polyline id=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" points=\"",
            id, colour, width);
}

/* Per second between neighbouring points of a figure that only grows (a drop, after a restart: 0). */
static double slope(const hist_sample_t *a, const hist_sample_t *b)
{
    double dt = b->t - a->t;
    return dt > 0 && b->done >= a->done ? (b->done - a->done) / dt : 0;
}

static double max_slope(const hist_sample_t *s, size_t n)
{
    double m = 0;
    for (size_t i = 1; i < n; i++)
        if (slope(&s[i - 1], &s[i]) > m)
            m = slope(&s[i - 1], &s[i]);
    return m;
}

/* Each segment's slope as a step over it, scaled to top. */
static void steps(FILE *f, const chart_t *c, const hist_sample_t *s, size_t n, double top)
{
    for (size_t i = 1; i < n; i++) {
        double y = py(slope(&s[i - 1], &s[i]), top);
        fprintf(f, "%.1f,%.1f %.1f,%.1f ", px(c, s[i - 1].t), y, px(c, s[i].t), y);
    }
}

static int too_few(FILE *f, const chart_t *c, size_t n, const char *why)
{
    if (n >= 2)
        return 0;
    chart_open(f, c);
    fprintf(f, "<text x=\"%d\" y=\"%d\">%s</text></svg>\n", ML, CH / 2, why);
    return 1;
}

/* The share of the work done, point by point, as the store keeps it: what the line draws, for a
   reader (or a test) that wants the figures rather than the pixels. */
static void shares(FILE *f, const hist_sample_t *s, size_t n)
{
    fputs("<desc id=\"chart-shares\">", f);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%.6f", i ? " " : "", s[i].done);
    fputs("</desc>", f);
}

void chart_progress(FILE *f, const hist_sample_t *s, size_t n, int running)
{
    chart_t c = { "progress-chart", "share of the estimated work done, and how fast it grows",
                  "work done (%)", "% an hour", 100, 0, 0, 0, running };
    if (too_few(f, &c, n, "Collecting samples: one every few seconds while the job runs."))
        return;
    c.t0 = s[0].t;
    c.t1 = s[n - 1].t;
    c.rmax = nice_top(max_slope(s, n) * 100 * 3600);
    chart_open(f, &c);
    shares(f, s, n);
    legend(f, &c);
    y_axes(f, &c);
    time_axis(f, &c);
    polyline(f, "chart-done", BLUE, 2.5);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.1f,%.1f ", px(&c, s[i].t), py(s[i].done, 1.0));
    fputs("\"/>", f);
    polyline(f, "chart-rate", ORANGE, 1.5);
    steps(f, &c, s, n, c.rmax / (100 * 3600));
    fputs("\"/></svg>\n", f);
}

void chart_broker(FILE *f, const hist_sample_t *s, size_t n)
{
    chart_t c = { "throughput-chart", "results a second and workers alive", "results/s", "workers alive",
                  0, 0, 0, 0, 1 };
    if (too_few(f, &c, n, "Collecting samples: one a second from now on."))
        return;
    uint32_t wmax = 0;
    for (size_t i = 0; i < n; i++)
        wmax = s[i].workers > wmax ? s[i].workers : wmax;
    c.t0 = s[0].t;
    c.t1 = s[n - 1].t;
    c.lmax = nice_top(max_slope(s, n));
    c.rmax = wmax < 4 ? 4 : (double)((wmax + 3) / 4 * 4);   /* its ticks at quarters: whole workers */
    chart_open(f, &c);
    legend(f, &c);
    y_axes(f, &c);
    time_axis(f, &c);
    polyline(f, "chart-results", BLUE, 2.5);
    steps(f, &c, s, n, c.lmax);
    fputs("\"/>", f);
    polyline(f, "chart-workers", ORANGE, 1.5);
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%.1f,%.1f ", px(&c, s[i].t), py(s[i].workers, c.rmax));
    fputs("\"/></svg>\n", f);
}
